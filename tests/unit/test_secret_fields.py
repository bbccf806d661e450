"""Credentials are screened in every stored free-text field, not in `content` alone (issue 45.8).

A token in a tag, a metadata value, a session id, a cue or an ingest speaker is stored, indexed,
exported and shown like content: it is refused the same way, with an error naming the field. An
ingest refuses only the message that holds one and stores the rest, reporting the refusal.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError
from rearview.importers import ImportRunner, read_source
from rearview.models import (
    IngestMessage,
    IngestRequest,
    MemoryFilter,
    MemoryStatus,
    UpdateRequest,
    WriteRequest,
)
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.portability import Restorer, export_tenant
from rearview.service.write.secrets import SecretsPolicy
from rearview.shared.clock import ManualClock
from tests.factories import T0

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS_ID = "AKIA" + "Q3EXAMPLE7KEYID9"


def _service(policy: SecretsPolicy = "refuse") -> MemoryService:
    clock = ManualClock(T0)
    config = replace(ServiceConfig(), secrets=policy)
    return MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), HashingEmbedder(64), clock, config
    )


WRITES: list[tuple[dict[str, Any], str]] = [
    ({"metadata": {"note": f"deploy with {GITHUB}"}}, "metadata.note"),
    ({"metadata": {f"key {AWS_ID}": "x"}}, "metadata"),
    ({"tags": ["ops", f"token:{GITHUB}"]}, "tags[1]"),
    ({"entities": [AWS_ID]}, "entities[0]"),
    ({"session_id": f"s-{GITHUB}"}, "session_id"),
    ({"speaker": f"bot {AWS_ID}"}, "speaker"),
    ({"cues": ["which token", f"the {GITHUB}"]}, "cues[1]"),
]


@pytest.mark.parametrize(("fields", "field"), WRITES)
def test_a_write_with_a_secret_in_any_text_field_is_refused_naming_it(
    fields: dict[str, Any], field: str
) -> None:
    service = _service()
    with pytest.raises(InvalidInputError) as refused:
        service.write("t1", WriteRequest.model_validate({"content": "The deploy runbook", **fields}))
    assert refused.value.field == field
    assert GITHUB not in str(refused.value) and AWS_ID not in str(refused.value)
    assert service.stats("t1").total == 0


def test_warn_stores_it_and_names_the_field_in_the_receipt() -> None:
    result = _service("warn").write(
        "t1", WriteRequest(content="The deploy runbook", tags=[GITHUB], metadata={"k": AWS_ID})
    )
    assert result.warnings is not None and len(result.warnings) == 2
    assert result.warnings[0].startswith("tags[0] ") and result.warnings[1].startswith("metadata.k ")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tags": [GITHUB]}, "tags[0]"),
        ({"metadata": {"note": GITHUB}}, "metadata.note"),
        ({"entities": ["ok", AWS_ID]}, "entities[1]"),
        ({"cues": [f"the {GITHUB}"]}, "cues[0]"),
    ],
)
def test_an_update_with_a_secret_in_any_text_field_is_refused(changes: dict[str, Any], field: str) -> None:
    service = _service()
    written = service.write("t1", WriteRequest(content="The deploy runbook", tags=["ops"]))
    req = UpdateRequest.model_validate({"memory_id": written.memory.id, **changes})
    with pytest.raises(InvalidInputError) as refused:
        service.update("t1", req)
    assert refused.value.field == field
    assert service.get("t1", written.memory.id).version == 1


def test_a_restored_record_with_a_secret_in_metadata_is_refused() -> None:
    source = _service("allow")
    source.write("t1", WriteRequest(content="The deploy runbook", metadata={"token": GITHUB}))
    (record,) = export_tenant(source.store, "t1")
    target = _service()
    with pytest.raises(InvalidInputError) as refused:
        Restorer(target).restore(record)
    assert refused.value.field == "memory.metadata.token"
    assert target.stats("t1").total == 0


def test_an_imported_record_with_a_secret_in_its_metadata_is_refused_by_name(tmp_path: Path) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(
        json.dumps(
            {"results": [
                {"id": "a", "memory": "Uses the deploy runbook", "metadata": {"token": GITHUB}},
                {"id": "b", "memory": "Prefers tea"},
            ]}
        )
    )  # fmt: skip
    service = _service()
    report = ImportRunner(service, "t1").run(read_source("mem0", export))
    assert report.counts == {"created": 1}
    [(source_id, reason)] = [(r.source_id, r.reason) for r in report.refused]
    assert source_id == "mem0:a" and reason.startswith("invalid `metadata.token`: ") and GITHUB not in reason


def test_an_ingest_stores_the_clean_messages_and_reports_the_refused_one() -> None:
    service = _service()
    messages = [
        IngestMessage(speaker="Ann", content=f"I moved the staging server to eu-west-{n}") for n in range(5)
    ]
    messages[2] = IngestMessage(speaker="Ann", content=f"the deploy key is {GITHUB}", message_id="m2")
    result = service.ingest("t1", IngestRequest(messages=messages, session_id="s1"))
    assert [o.index for o in result.messages] == [0, 1, 3, 4]
    assert [(r.index, r.message_id, r.field) for r in result.refused] == [(2, "m2", "messages[2].content")]
    assert "a GitHub token" in result.refused[0].reason and GITHUB not in result.refused[0].reason
    stored = {m.content for m in service.store.list_memories("t1", _all(), limit=50).items}
    assert not any(GITHUB in text for text in stored)
    assert {f"Ann: I moved the staging server to eu-west-{n}" for n in (0, 1, 3, 4)} <= stored


def test_an_ingest_speaker_holding_a_secret_refuses_that_message() -> None:
    service = _service()
    messages = [
        IngestMessage(speaker="Ann", content="I moved the staging server to Frankfurt"),
        IngestMessage(speaker=f"bot {AWS_ID}", content="Noted"),
    ]
    result = service.ingest("t1", IngestRequest(messages=messages, session_id="s1"))
    assert [o.index for o in result.messages] == [0]
    assert [(r.index, r.field) for r in result.refused] == [(1, "messages[1].speaker")]


def test_an_ingest_session_id_holding_a_secret_refuses_the_call() -> None:
    service = _service()
    messages = [IngestMessage(speaker="Ann", content="I moved the staging server to Frankfurt")]
    with pytest.raises(InvalidInputError) as refused:
        service.ingest("t1", IngestRequest(messages=messages, session_id=f"s-{GITHUB}"))
    assert refused.value.field == "session_id"
    assert service.stats("t1").total == 0


def _all() -> MemoryFilter:
    return MemoryFilter(statuses=tuple(MemoryStatus))


def test_a_langgraph_value_holding_a_secret_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.store.base")
    from rearview import Memory
    from rearview.config.settings import Settings
    from rearview.integrations.langgraph import RearviewStore

    with Memory(settings=Settings.load(data_dir=tmp_path, embedder="hashing")) as memory:
        store = RearviewStore(memory)
        with pytest.raises(InvalidInputError) as refused:
            store.put(("users", "alice"), "ci", {"content": "The CI settings", "token": GITHUB})
        assert refused.value.field.startswith("metadata.") and GITHUB not in str(refused.value)
        assert store.get(("users", "alice"), "ci") is None
