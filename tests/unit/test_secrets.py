"""Obvious credentials are refused as memories by default (issue 34.11), never echoed, one setting away.

The secrets below are made up, in the shapes the providers issue.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError
from rearview.models import IngestMessage, IngestRequest, UpdateRequest, WriteRequest
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.portability import Restorer, export_tenant
from rearview.service.write.secrets import SecretsPolicy, find_secret
from rearview.shared.clock import ManualClock
from tests.factories import T0

AWS_ID = "AKIA" + "Q3EXAMPLE7KEYID9"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"

FOUND = [
    (f"my AWS key id is {AWS_ID}", "an AWS access key id"),
    (f"aws_secret_access_key = {AWS_SECRET}", "an AWS secret access key"),
    (f'"SecretAccessKey": "{AWS_SECRET}"', "an AWS secret access key"),
    (f"the deploy token is {GITHUB}", "a GitHub token"),
    (f"bot token {SLACK} for #ops", "a Slack token"),
    (f"OPENAI_API_KEY={OPENAI}", "an OpenAI API key"),
    (f"the server's key:\n{PEM}", "a private key block"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "a private key block"),
]

NOT_SECRETS = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the deploy",  # 40 hex chars: a git id
    "we use sk-learn and the task-force-for-the-migration-planning-committee",
    "sk-this-is-a-long-hyphenated-label-in-lowercase",
    "akia is not a key; AKIA alone neither",
    "xoxb- is the prefix of Slack bot tokens",
    "-----BEGIN PUBLIC KEY----- is fine to keep",
    "ghp_short",
]


@pytest.mark.parametrize(("text", "kind"), FOUND)
def test_each_kind_is_found(text: str, kind: str) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secret(text) is None


def _service(policy: SecretsPolicy = "refuse") -> MemoryService:
    clock = ManualClock(T0)
    config = replace(ServiceConfig(), secrets=policy)
    return MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), HashingEmbedder(64), clock, config
    )


@pytest.mark.parametrize(("text", "kind"), FOUND)
def test_a_write_holding_a_secret_is_refused_by_default_naming_the_kind_not_the_secret(
    text: str, kind: str
) -> None:
    service = _service()
    with pytest.raises(InvalidInputError) as refused:
        service.write("t1", WriteRequest(content=text))
    assert refused.value.field == "content"
    message = str(refused.value)
    assert kind in message and "REARVIEW_SECRETS" in message
    for secret in (AWS_ID, AWS_SECRET, GITHUB, SLACK, OPENAI, "b3BlbnNzaC1rZXktdjEAAAAA"):
        assert secret not in message
    assert service.stats("t1").total == 0


def test_warn_stores_it_and_says_so_in_the_receipt() -> None:
    result = _service("warn").write("t1", WriteRequest(content=f"token {GITHUB}"))
    assert result.memory.content == f"token {GITHUB}"
    assert result.warnings is not None and len(result.warnings) == 1
    assert "a GitHub token" in result.warnings[0] and GITHUB not in result.warnings[0]


def test_allow_stores_it_without_a_word() -> None:
    result = _service("allow").write("t1", WriteRequest(content=f"token {GITHUB}"))
    assert result.warnings is None


def test_a_clean_write_has_no_warnings() -> None:
    assert _service("warn").write("t1", WriteRequest(content="The user likes green tea")).warnings is None


def test_an_ingested_message_holding_a_secret_is_refused_alone() -> None:
    service = _service()
    messages = [
        IngestMessage(speaker="Ann", content="I moved the staging server to eu-west-1"),
        IngestMessage(speaker="Ann", content=f"remember that the deploy key is {OPENAI}"),
    ]
    result = service.ingest("t1", IngestRequest(messages=messages, session_id="s1"))
    [refused] = result.refused
    assert refused.field == "messages[1].content" and "an OpenAI API key" in refused.reason
    assert [o.index for o in result.messages] == [0]
    assert OPENAI not in refused.reason


def test_an_update_to_a_secret_is_refused() -> None:
    service = _service()
    written = service.write("t1", WriteRequest(content="the deploy key lives in the vault"))
    with pytest.raises(InvalidInputError, match="a Slack token"):
        service.update("t1", UpdateRequest(memory_id=written.memory.id, content=f"the key is {SLACK}"))
    assert service.get("t1", written.memory.id).content == "the deploy key lives in the vault"


def test_an_exported_secret_is_refused_on_import_unless_allowed() -> None:
    source = _service("allow")
    source.write("t1", WriteRequest(content=f"aws_secret_access_key={AWS_SECRET}"))
    (record,) = export_tenant(source.store, "t1")
    target = _service()
    with pytest.raises(InvalidInputError, match="an AWS secret access key"):
        Restorer(target).restore(record)
    assert target.stats("t1").total == 0
    assert not Restorer(_service("allow")).restore(record).present


def test_the_setting_reaches_the_service() -> None:
    from rearview.bootstrap import build_config

    assert build_config(Settings.load(embedder="hashing")).secrets == "refuse"
    assert build_config(Settings.load(embedder="hashing", secrets="warn")).secrets == "warn"
    with pytest.raises(ValueError, match="refuse"):
        Settings.load(secrets="never")
