"""`memory_ingest` with a language model: recorded Bedrock Converse answers through botocore's Stubber.

The `converse_extract_*.json` files in `tests/fixtures/bedrock/` have the shape of boto3 `converse`
responses (`output.message.content[0].text`, `stopReason`, `usage`), written to that documented
shape, not captured from a live account (as the other files there). Throttling goes through
botocore's real retry loop (`WireAnswers`), as in `test_consolidation.py`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import botocore.endpoint
import pytest
from botocore.stub import ANY, Stubber

from rearview.backends.bedrock_llm import BedrockConverseModel
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import build_extractor
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import LanguageModelError
from rearview.models import (
    ExtractionMode,
    IngestMessage,
    IngestRequest,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
)
from rearview.ports import Completion, LanguageModel
from rearview.service.ingest.extraction import RulesExtractor
from rearview.service.ingest.llm_extraction import (
    EXTRACTION_MAX_TOKENS,
    EXTRACTION_PROMPT_VERSION,
    EXTRACTION_SYSTEM,
    MAX_CHUNK_MESSAGES,
    LanguageModelExtractor,
)
from rearview.service.memory_service import MemoryService
from rearview.service.write.consolidation import CONTRADICTION_SYSTEM, Consolidator
from rearview.shared.clock import ManualClock
from rearview.testing import RecordingSleep, ScriptedModel
from tests.fixtures.aws import WireAnswers, wire_error

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "bedrock"
MODEL = "amazon.nova-lite-v1:0"
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday
NOW = datetime(2023, 5, 9, 9, 0, tzinfo=UTC)
EXTRACT = {
    "modelId": MODEL,
    "system": [{"text": EXTRACTION_SYSTEM}],
    "messages": [{"role": "user", "content": [{"text": ANY}]}],
    "inferenceConfig": {"maxTokens": EXTRACTION_MAX_TOKENS, "temperature": 0.0},
}


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


def service_with(model: LanguageModel) -> MemoryService:
    clock = ManualClock(NOW)
    return MemoryService(
        InMemoryMemoryStore(clock),
        InMemoryMemoryIndex(256),
        HashingEmbedder(256),
        clock,
        consolidator=Consolidator(model),
        extractor=LanguageModelExtractor(model),
    )


def trip(session_id: str = "s1") -> IngestRequest:
    """The conversation `converse_extract_good.json` answers."""
    texts = [
        ("Ann", "I went hiking on Mount Tam yesterday with my sister Jo."),
        ("Bo", "Nice! How was it?"),
        ("Ann", "Great. We fly to Lisbon next month, I booked window seats, I always prefer them."),
    ]
    return IngestRequest(
        session_id=session_id,
        messages=[
            IngestMessage(
                speaker=who, content=text, timestamp=SAID + timedelta(minutes=i), message_id=f"d{i}"
            )
            for i, (who, text) in enumerate(texts)
        ],
    )


def stored(service: MemoryService, *types: MemoryType) -> list[str]:
    flt = MemoryFilter(types=types or None, statuses=tuple(MemoryStatus))
    return sorted(m.content for m in service.store.list_memories("t1", flt).items)


EPISODES = [
    "Ann: Great. We fly to Lisbon next month, I booked window seats, I always prefer them.",
    "Ann: I went hiking on Mount Tam yesterday with my sister Jo.",
    "Bo: Nice! How was it?",
]


# ------------------------------------------------------------------------------ a good answer


def test_extracted_memories_are_written_linked_to_the_messages_they_cite(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)
    service = service_with(BedrockConverseModel(MODEL, client))

    result = service.ingest("t1", trip())

    assert result.mode is ExtractionMode.LLM and result.fallback_reason is None
    assert result.dropped_items == 1  # the procedure cites m7, which is not a message of the call
    assert (result.created, result.merged, result.superseded) == (3 + 4, 0, 0)
    first, second, third = result.messages
    assert first.facts == [
        "Ann went hiking on Mount Tam with her sister Jo on 2023-05-07.",
        "Jo is Ann's sister.",
    ]
    assert second.facts == []
    assert third.facts == [  # a memory is reported with the last message it cites
        "Ann prefers window seats on flights.",
        "Ann and Jo are flying to Lisbon in June 2023; Ann booked window seats.",
    ]
    episode = service.get("t1", first.memory_id)
    assert episode.type is MemoryType.EPISODIC and episode.metadata["extraction"] == "llm"
    sister = service.get("t1", first.created[2])
    assert sister.content == "Jo is Ann's sister." and sister.type is MemoryType.SEMANTIC
    assert sister.derived_from == [first.memory_id] and sister.metadata["message_id"] == "d0"
    assert sister.importance == 4 and sister.entities == ["Ann", "Jo"] and sister.confidence < 1
    assert sister.metadata["extracted_by"] == "llm"
    assert "speaker" not in sister.metadata  # said by Ann, about Jo: no subject for ranking
    assert sister.metadata["extraction_prompt"] == EXTRACTION_PROMPT_VERSION
    flight = service.get("t1", third.created[-1])
    assert flight.derived_from == [first.memory_id, third.memory_id]
    assert "message_id" not in flight.metadata  # several sources: follow `derived_from`
    assert flight.session_id == "s1" and flight.importance == 4
    assert flight.event_time == datetime(2023, 6, 1, tzinfo=UTC)


def test_a_relative_date_becomes_the_absolute_day_resolved_against_the_message_time(
    client: Any, stub: Any
) -> None:
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)
    model = BedrockConverseModel(MODEL, client)
    prompts: list[str] = []
    stub.client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse",
        lambda params, **_: prompts.append(params["messages"][0]["content"][0]["text"]),
    )
    service = service_with(model)

    first = service.ingest("t1", trip()).messages[0]

    assert "[m0] 2023-05-08 (Monday) 13:56 UTC | Ann: I went hiking on Mount Tam yesterday" in prompts[0]
    hike = service.get("t1", first.created[1])
    assert hike.type is MemoryType.EPISODIC and hike.content.endswith("on 2023-05-07.")
    assert hike.event_time == datetime(2023, 5, 7, tzinfo=UTC)  # "yesterday", not the message's day
    assert hike.session_id == "s1"


# ------------------------------------------------------------------ unusable answers: fallback


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        ("converse_extract_malformed", "not JSON"),
        ("converse_extract_schema_invalid", "breaks the schema at 1.type"),
        ("converse_extract_truncated", "cut off at 4000 tokens (stop reason max_tokens)"),
    ],
)
def test_an_unusable_answer_stores_the_messages_only_and_says_why(
    client: Any, stub: Any, fixture: str, reason: str
) -> None:
    stub.add_response("converse", recorded(fixture), EXTRACT)
    service = service_with(BedrockConverseModel(MODEL, client))

    result = service.ingest("t1", trip())

    assert result.mode is ExtractionMode.FALLBACK and reason in str(result.fallback_reason)
    assert str(result.fallback_reason).startswith("chunk 1 (messages m0-m2): ")
    assert stored(service) == EPISODES  # no fact of the valid first item either: nothing half-written
    assert result.created == 3 and all(
        o.mode is ExtractionMode.FALLBACK and not o.facts for o in result.messages
    )
    assert service.get("t1", result.messages[0].memory_id).metadata["extraction"] == "fallback"


def test_a_failed_call_is_a_fallback(client: Any, stub: Any) -> None:
    stub.add_client_error("converse", service_error_code="AccessDeniedException", http_status_code=403)
    service = service_with(BedrockConverseModel(MODEL, client))
    result = service.ingest("t1", trip())
    assert result.mode is ExtractionMode.FALLBACK and "AccessDeniedException" in str(result.fallback_reason)
    assert stored(service) == EPISODES


@pytest.fixture
def wire_model(monkeypatch: pytest.MonkeyPatch) -> tuple[BedrockConverseModel, RecordingSleep]:
    """A model on a real client (botocore's standard retries, 3 attempts) that does not really sleep."""
    for name, value in (
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "x"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
    ):
        monkeypatch.setenv(name, value)
    sleeps = RecordingSleep()
    monkeypatch.setattr(botocore.endpoint.time, "sleep", sleeps)
    return BedrockConverseModel(MODEL, max_attempts=3), sleeps


def test_throttling_is_retried_then_the_answer_is_used(
    wire_model: tuple[BedrockConverseModel, RecordingSleep],
) -> None:
    model, sleeps = wire_model
    answers = [wire_error(429, "ThrottlingException"), (200, recorded("converse_extract_good"))]
    wire = WireAnswers(model._client.get(), "Converse", answers)

    result = service_with(model).ingest("t1", trip())

    assert result.mode is ExtractionMode.LLM and result.created == 7
    assert (wire.sends, len(sleeps.delays)) == (2, 1)


def test_throttling_past_the_retries_is_a_fallback(
    wire_model: tuple[BedrockConverseModel, RecordingSleep],
) -> None:
    model, sleeps = wire_model
    wire = WireAnswers(model._client.get(), "Converse", [wire_error(429, "ThrottlingException")] * 3)
    service = service_with(model)

    result = service.ingest("t1", trip())

    assert (wire.sends, len(sleeps.delays)) == (3, 2)
    assert result.mode is ExtractionMode.FALLBACK and "ThrottlingException" in str(result.fallback_reason)
    assert stored(service) == EPISODES


# ------------------------------------------------------------------------------- idempotency


def test_resending_an_extracted_call_creates_nothing_and_asks_the_model_nothing(
    client: Any, stub: Any
) -> None:
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)  # one answer only
    service = service_with(BedrockConverseModel(MODEL, client))
    first = service.ingest("t1", trip())
    before = stored(service)

    again = service.ingest("t1", trip())  # a second model call would find no stubbed answer

    assert stored(service) == before and len(before) == 7
    assert (again.created, again.merged, again.replayed, again.mode) == (0, 0, 3, ExtractionMode.LLM)
    assert [o.memory_id for o in again.messages] == [o.memory_id for o in first.messages]


def test_the_same_answer_twice_replays_every_memory(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)
    service = service_with(BedrockConverseModel(MODEL, client))
    service.ingest("t1", trip())
    before = stored(service)
    bigger = trip()
    bigger.messages.append(IngestMessage(speaker="Bo", content="Have fun!", timestamp=SAID, message_id="d3"))

    again = service.ingest("t1", bigger)  # d3 is new: the model reads the call again

    assert stored(service) == sorted([*before, "Bo: Have fun!"])
    assert (again.created, again.replayed) == (1, 7)


def test_a_fallback_is_repaired_by_sending_the_call_again(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_extract_malformed"), EXTRACT)
    stub.add_response("converse", recorded("converse_extract_good"), EXTRACT)
    service = service_with(BedrockConverseModel(MODEL, client))
    assert service.ingest("t1", trip()).mode is ExtractionMode.FALLBACK

    again = service.ingest("t1", trip())

    assert again.mode is ExtractionMode.LLM and (again.replayed, again.created) == (3, 4)
    assert len(stored(service)) == 7


# -------------------------------------------------------------------- through the write path


def test_an_extracted_preference_supersedes_the_one_it_contradicts(client: Any, stub: Any) -> None:
    stub.add_response("converse", recorded("converse_extract_editor_vim"), EXTRACT)
    stub.add_response("converse", recorded("converse_extract_editor_emacs"), EXTRACT)
    judge = {**EXTRACT, "system": [{"text": CONTRADICTION_SYSTEM}], "inferenceConfig": ANY}
    stub.add_response("converse", recorded("converse_contradiction"), judge)  # the only judgement asked
    service = service_with(BedrockConverseModel(MODEL, client))

    def say(text: str, session_id: str) -> Any:
        message = IngestMessage(speaker="Ann", content=text, timestamp=SAID)
        return service.ingest("t1", IngestRequest(session_id=session_id, messages=[message]))

    old = say("I do all my editing in Vim.", "s1").messages[0]
    new = say("I do all my editing in Emacs now.", "s2").messages[0]  # the episodes are not judged

    vim, emacs = old.created[1], new.created[1]
    assert new.superseded == [vim]
    retired = service.get("t1", vim)
    assert retired.status is MemoryStatus.SUPERSEDED and retired.superseded_by == emacs
    assert service.get("t1", old.memory_id).status is MemoryStatus.ACTIVE  # what was said stays


def test_an_extracted_restatement_merges_into_the_memory_it_repeats() -> None:
    answer = json.dumps([
        {"type": "semantic", "content": "Ann is allergic to peanuts", "importance": 0.9,
         "entities": ["Ann"], "source_message_ids": ["m0"]},
    ])  # fmt: skip
    service = service_with(ScriptedModel(answer, answer))
    say = IngestMessage(speaker="Ann", content="Peanuts make me sick, I'm allergic.", timestamp=SAID)
    first = service.ingest("t1", IngestRequest(session_id="s1", messages=[say]))
    again = service.ingest("t1", IngestRequest(session_id="s2", messages=[say]))
    assert again.merged == 2  # the same episode, and the same fact, in another session
    assert again.messages[0].merged[1] == first.messages[0].created[1]


# ------------------------------------------------------------------------- bounds and seams


def test_a_long_call_is_extracted_in_chunks_and_one_bad_chunk_falls_back_whole() -> None:
    good = json.dumps([
        {"type": "semantic", "content": "Ann counted to 39", "importance": 0.1,
         "entities": ["Ann"], "source_message_ids": ["m39"]},
    ])  # fmt: skip
    model = ScriptedModel(good, Completion('[{"type": "semantic", "content": "Ann co', "max_tokens"))
    service = service_with(model)
    messages = [IngestMessage(speaker="Ann", content=f"number {i}", timestamp=SAID) for i in range(45)]

    result = service.ingest("t1", IngestRequest(session_id="s1", messages=messages))

    assert len(model.prompts) == 2 and "[m39]" in model.prompts[0] and "[m40]" not in model.prompts[0]
    assert model.prompts[1].count("\n[m") == 45 - MAX_CHUNK_MESSAGES
    assert result.mode is ExtractionMode.FALLBACK and "chunk 2 (messages m40-m44)" in str(
        result.fallback_reason
    )
    assert stored(service, MemoryType.SEMANTIC) == []  # the first chunk's fact is not written either


def test_a_model_error_in_any_chunk_is_a_fallback() -> None:
    service = service_with(ScriptedModel(LanguageModelError("Bedrock down")))
    result = service.ingest("t1", trip())
    assert result.mode is ExtractionMode.FALLBACK and "Bedrock down" in str(result.fallback_reason)


def test_the_extractor_follows_the_llm_setting() -> None:
    assert isinstance(build_extractor(None), RulesExtractor)
    assert isinstance(build_extractor(ScriptedModel()), LanguageModelExtractor)


def test_a_cited_id_may_keep_its_brackets_or_lose_its_prefix() -> None:
    answer = json.dumps([
        {"type": "semantic", "content": "Bo asked about the hike", "importance": 0.1,
         "entities": ["Bo"], "source_message_ids": ["[m1]", "0"]},
    ])  # fmt: skip
    result = service_with(ScriptedModel(answer)).ingest("t1", trip())
    assert result.dropped_items == 0 and result.messages[1].facts == ["Bo asked about the hike"]
