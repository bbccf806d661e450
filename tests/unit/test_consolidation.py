"""Consolidation with a language model: Bedrock Converse (botocore Stubber, recorded response shapes).

moto does not implement bedrock-runtime. The JSON files in `tests/fixtures/bedrock/` have the
shape of Converse responses (`output.message.content[].text`, `stopReason`, `usage`, `metrics`);
they were written to that documented shape, not captured from a live account.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.stub import ANY, Stubber

from rearview.backends.bedrock_llm import BedrockConverseModel
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import BackendError, LanguageModelError
from rearview.models import HistoryAction, MemoryStatus, MemoryType, WriteAction, WriteRequest
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.write.consolidation import CONTRADICTION_SYSTEM, SUMMARY_SYSTEM, Consolidator
from rearview.shared.clock import ManualClock
from rearview.testing import RecordingSleep, ScriptedModel
from tests.factories import T0
from tests.fixtures.aws import WireAnswers, wire_error

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "bedrock"
MODEL = "amazon.nova-lite-v1:0"


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return data


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def stub(client: Any) -> Any:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def converse_params(system: str, max_tokens: int) -> dict[str, Any]:
    return {
        "modelId": MODEL,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": ANY}]}],
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0},
    }


def service_with(model: BedrockConverseModel | Any, **config: Any) -> MemoryService:
    clock = ManualClock(T0)
    return MemoryService(
        InMemoryMemoryStore(clock),
        InMemoryMemoryIndex(256),
        HashingEmbedder(256),
        clock,
        ServiceConfig(**config),
        consolidator=Consolidator(model),
    )


# ------------------------------------------------------------------------------ the adapter


def test_converse_answer_is_the_joined_text(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_summary"), converse_params("sys", 50))
    model = BedrockConverseModel(MODEL, client)
    assert model.complete("sys", "prompt", 50).startswith("The team reviewed the cache-layer pull request")
    assert model.model_id == f"bedrock:{MODEL}"


def test_throttling_is_retried_by_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    sleeps = RecordingSleep()
    monkeypatch.setattr(botocore.endpoint.time, "sleep", sleeps)
    model = BedrockConverseModel(MODEL, max_attempts=3)
    answers = [wire_error(429, "ThrottlingException"), (200, recorded("converse_summary"))]
    wire = WireAnswers(model._client.get(), "Converse", answers)
    assert model.complete("sys", "prompt", 50).startswith("The team reviewed")
    assert (wire.sends, len(sleeps.delays)) == (2, 1)


@pytest.mark.parametrize("code", ["AccessDeniedException", "ValidationException"])
def test_other_errors_fail_at_once(client: Any, stub: Any, code: str) -> None:
    stub.add_client_error("converse", service_error_code=code, service_message="nope", http_status_code=400)
    with pytest.raises(LanguageModelError, match=code):
        BedrockConverseModel(MODEL, client).complete("s", "p", 10)


def test_an_answer_without_text_is_an_error(client: Any, stub: Any) -> None:
    empty = recorded("converse_summary")
    empty["output"]["message"]["content"] = []
    empty["stopReason"] = "max_tokens"
    stub.add_response("converse", empty, converse_params("s", 10))
    with pytest.raises(LanguageModelError, match="max_tokens"):
        BedrockConverseModel(MODEL, client).complete("s", "p", 10)


# ----------------------------------------------------------------------- through the service


def test_summarize_is_abstractive_with_bedrock(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_summary"), converse_params(SUMMARY_SYSTEM, 700))
    service = service_with(BedrockConverseModel(MODEL, client))
    ids = [
        service.write("t1", WriteRequest(content=text, type=MemoryType.EPISODIC, session_id="s9")).memory.id
        for text in [
            "Reviewed the PR for the cache layer",
            "Found a race in eviction",
            "Fixed eviction with a lock",
        ]
    ]
    summary = service.summarize("t1", session_id="s9").memory
    assert summary.content.startswith(
        "Summary of session s9 (2026-01-01 to 2026-01-01, 3 memories): The team"
    )
    assert summary.metadata == {"summary_method": "abstractive", "summary_model": f"bedrock:{MODEL}"}
    assert sorted(summary.derived_from) == sorted(ids)


def test_summarize_falls_back_to_extractive_when_the_model_fails(client: Any, stub: Any) -> None:
    stub.add_client_error("converse", service_error_code="AccessDeniedException", http_status_code=403)
    service = service_with(BedrockConverseModel(MODEL, client))
    service.write("t1", WriteRequest(content="Deployed v2", type=MemoryType.EPISODIC, session_id="s1"))
    summary = service.summarize("t1", session_id="s1").memory
    assert "Deployed v2" in summary.content and summary.metadata == {"summary_method": "extractive"}


def test_a_contradicting_write_supersedes_the_older_memory(client: Any, stub: Any) -> None:
    stub.add_response(
        "converse", recorded("converse_contradiction"), converse_params(CONTRADICTION_SYSTEM, 150)
    )
    service = service_with(BedrockConverseModel(MODEL, client))
    old = service.write("t1", WriteRequest(content="User's preferred editor is Vim")).memory
    new = service.write("t1", WriteRequest(content="User's preferred editor is Emacs"))
    assert new.action is WriteAction.SUPERSEDED and new.superseded_ids == [old.id]
    retired = service.get("t1", old.id)
    assert retired.status is MemoryStatus.SUPERSEDED and retired.superseded_by == new.memory.id
    event = service.history("t1", old.id).events[-1]
    assert event.action is HistoryAction.SUPERSEDED and "changed from Vim to Emacs" in (event.note or "")


def test_a_near_duplicate_that_contradicts_is_superseded_not_merged(client: Any, stub: Any) -> None:
    stub.add_response(
        "converse", recorded("converse_contradiction"), converse_params(CONTRADICTION_SYSTEM, 150)
    )
    service = service_with(BedrockConverseModel(MODEL, client), near_duplicate_threshold=0.85)
    old = service.write("t1", WriteRequest(content="User's preferred editor is Vim")).memory
    new = service.write("t1", WriteRequest(content="User's preferred editor is Emacs"))
    assert new.action is WriteAction.SUPERSEDED and new.superseded_ids == [old.id]


def test_no_contradiction_leaves_both(client: Any, stub: Any) -> None:
    stub.add_response(
        "converse", recorded("converse_no_contradiction"), converse_params(CONTRADICTION_SYSTEM, 150)
    )
    service = service_with(BedrockConverseModel(MODEL, client))
    old = service.write("t1", WriteRequest(content="User's preferred editor is Vim")).memory
    new = service.write("t1", WriteRequest(content="User's preferred editor is Vim with plugins"))
    assert new.action is WriteAction.CREATED
    assert service.get("t1", old.id).status is MemoryStatus.ACTIVE


@pytest.mark.parametrize("answer", ["I think so.", '{"contradicts": "yes"}', BackendError("down")])
def test_an_unusable_verdict_never_supersedes(answer: str | Exception) -> None:
    service = service_with(ScriptedModel(answer))
    old = service.write("t1", WriteRequest(content="User's preferred editor is Vim")).memory
    assert (
        service.write("t1", WriteRequest(content="User's preferred editor is Emacs")).action
        is WriteAction.CREATED
    )
    assert service.get("t1", old.id).status is MemoryStatus.ACTIVE


def test_contradiction_check_can_be_turned_off() -> None:
    model = ScriptedModel()
    service = service_with(model, contradiction_check=False)
    service.write("t1", WriteRequest(content="User's preferred editor is Vim"))
    service.write("t1", WriteRequest(content="User's preferred editor is Emacs"))
    assert model.prompts == []


def test_an_over_long_summary_falls_back_to_extractive() -> None:
    service = service_with(ScriptedModel("x" * 5000))
    service.write("t1", WriteRequest(content="One event", type=MemoryType.EPISODIC, session_id="s"))
    assert service.summarize("t1", session_id="s").memory.metadata["summary_method"] == "extractive"
