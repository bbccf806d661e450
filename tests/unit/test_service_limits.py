"""The limits of `rearview.models` as the service enforces them, clear errors for bad input, and updates under races."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import ConflictError, InvalidInputError
from rearview.limits import (
    MAX_AGENT_ID_CHARS,
    MAX_CONTENT_CHARS,
    MAX_FILTER_IDS,
    MAX_METADATA_BYTES,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_SESSION_ID_CHARS,
    MAX_TAGS,
    AgentIdText,
    checked,
)
from rearview.models import (
    ForgetRequest,
    IngestRequest,
    Memory,
    MemoryFilter,
    MemoryType,
    SearchRequest,
    UpdateRequest,
    WriteRequest,
)
from rearview.service.changes import UPDATE_ATTEMPTS
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock, parse_time
from rearview.text import disallowed_control_chars


def test_disallowed_control_chars_lists_distinct_code_points_but_allows_tab_newline_return() -> None:
    assert disallowed_control_chars("a\tb\nc\r\nd") == []
    assert disallowed_control_chars("x\x00y\x1b\x00z\x7f\x85") == [0x00, 0x1B, 0x7F, 0x85]


@pytest.mark.parametrize(
    ("call", "field", "limit"),
    [
        (lambda: SearchRequest(query="q" * (MAX_QUERY_CHARS + 1)), "query", MAX_QUERY_CHARS),
        (
            lambda: SearchRequest(query=" ".join(f"term{i}" for i in range(MAX_QUERY_TERMS + 1))),
            "query",
            MAX_QUERY_TERMS,
        ),
        (lambda: WriteRequest(content="x", session_id="s" * 4500), "session_id", MAX_SESSION_ID_CHARS),
        (
            lambda: SearchRequest(query="x", agent_id="a" * (MAX_AGENT_ID_CHARS + 1)),
            "agent_id",
            MAX_AGENT_ID_CHARS,
        ),
        (lambda: ForgetRequest(ids=[f"id{i}" for i in range(MAX_FILTER_IDS + 1)]), "ids", MAX_FILTER_IDS),
        (lambda: MemoryFilter(tags=tuple(f"t{i}" for i in range(1500))), "tags", MAX_TAGS),
        (
            lambda: WriteRequest(content="x", metadata={f"k{i}": "v" * 400 for i in range(12)}),
            "metadata",
            MAX_METADATA_BYTES,
        ),
        (
            lambda: checked(AgentIdText, "a" * (MAX_AGENT_ID_CHARS + 1), "agent_id"),
            "agent_id",
            MAX_AGENT_ID_CHARS,
        ),
    ],
)
def test_each_limit_is_an_invalid_input_naming_the_field_and_the_limit(
    call: Any, field: str, limit: int
) -> None:
    with pytest.raises(InvalidInputError) as info:
        call()
    assert info.value.field == field
    assert str(limit) in info.value.problem


@pytest.mark.parametrize(
    "fields",
    [
        {"content": "secret one\x00secret two"},
        {"content": "fine", "tags": ["ok", "bad\x07"]},
        {"content": "fine", "metadata": {"note": "a\x1bb"}},
        {"content": "fine", "session_id": "s\x00"},
    ],
)
def test_control_characters_are_refused_in_free_text(service: MemoryService, fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError, match="control characters"):
        service.write("t1", WriteRequest.model_validate(fields))
    assert service.stats("t1").total == 0


def test_a_request_is_valid_by_construction_whoever_builds_it() -> None:
    """One validation: the model refuses what the service used to re-check field by field."""
    with pytest.raises(InvalidInputError) as info:
        WriteRequest(content="   ")
    assert (info.value.field, info.value.problem) == ("content", "must not be empty")
    req = WriteRequest(content="  tea  ", tags=[" a ", "a", "", "b"])
    assert (req.content, req.tags) == ("tea", ["a", "b"])
    with pytest.raises(InvalidInputError) as info:
        IngestRequest(session_id="s", messages=[{"content": "hi", "role": "user"}, {"content": "yo"}])
    assert (info.value.field, info.value.problem) == ("messages[1].speaker", "must not be empty")


def test_search_and_forget_refuse_too_many_filter_tags_before_any_backend_sees_them(
    service: MemoryService,
) -> None:
    tags = tuple(f"t{i}" for i in range(1500))  # used to reach SQLite's "Expression tree is too large"
    with pytest.raises(InvalidInputError, match="tags"):
        service.search("t1", SearchRequest(query="x", filter=MemoryFilter(tags=tags)))
    with pytest.raises(InvalidInputError, match="tags"):
        service.forget("t1", ForgetRequest(filter=MemoryFilter(tags=tags)))


def test_a_huge_query_is_refused_and_a_search_echoes_only_the_bounded_query(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError, match=f"limit is {MAX_QUERY_CHARS}"):
        service.search("t1", SearchRequest(query="tabs " * 400_000))
    assert service.search("t1", SearchRequest(query="  tabs  ")).query == "tabs"


@pytest.mark.parametrize("value", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_a_time_outside_the_calendar_once_in_utc_is_invalid_input_not_an_overflow(value: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_time(value, "time_from")
    assert info.value.field == "time_from"


def test_summarize_with_an_oversized_session_id_names_the_session_id_limit(service: MemoryService) -> None:
    with pytest.raises(InvalidInputError) as info:
        service.summarize("t1", session_id="s" * 4500)
    assert info.value.field == "session_id" and str(MAX_SESSION_ID_CHARS) in info.value.problem


def test_summarizing_one_source_longer_than_the_budget_keeps_its_beginning(service: MemoryService) -> None:
    words = " ".join(f"step{i} done" for i in range(300))  # ~3,000 characters, over the summary budget
    service.write("t1", WriteRequest(content=words, type=MemoryType.EPISODIC, session_id="s1"))

    summary = service.summarize("t1", session_id="s1").memory

    body = summary.content.split("): ", 1)[1]
    assert body.startswith("step0 done step1 done")
    assert body.endswith("\u2026.") and len(summary.content) <= MAX_CONTENT_CHARS


class RacingStore(InMemoryMemoryStore):
    """A store whose first `racers` reads of a memory all return before any of them may go on.

    So that many updates read the same version and then commit against it: a race, every time.
    """

    def __init__(self, clock: ManualClock, racers: int) -> None:
        super().__init__(clock)
        self.barrier = threading.Barrier(racers, timeout=10)
        self.racing = False

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        found = super().get(tenant_id, memory_id)
        if self.racing and not self.barrier.broken:
            try:
                self.barrier.wait()
            finally:
                self.racing = False
        return found


@pytest.fixture
def racing(clock: ManualClock) -> tuple[MemoryService, RacingStore]:
    store = RacingStore(clock, racers=UPDATE_ATTEMPTS - 1)
    return MemoryService(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock), store


def _race(service: MemoryService, store: RacingStore, requests: list[UpdateRequest]) -> list[Any]:
    store.racing = True
    with ThreadPoolExecutor(len(requests)) as pool:
        futures = [pool.submit(service.update, "t1", r) for r in requests]
    return [f.exception() or f.result() for f in futures]


def test_concurrent_updates_without_expected_version_all_apply(
    racing: tuple[MemoryService, RacingStore],
) -> None:
    service, store = racing
    memory_id = service.write("t1", WriteRequest(content="User prefers tea")).memory.id
    racers = UPDATE_ATTEMPTS - 1

    outcomes = _race(
        service, store, [UpdateRequest(memory_id=memory_id, tags=[f"t{i}"]) for i in range(racers)]
    )

    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert service.get("t1", memory_id).version == 1 + racers


def test_concurrent_updates_with_expected_version_still_conflict(
    racing: tuple[MemoryService, RacingStore],
) -> None:
    service, store = racing
    memory_id = service.write("t1", WriteRequest(content="User prefers tea")).memory.id
    racers = UPDATE_ATTEMPTS - 1
    requests = [UpdateRequest(memory_id=memory_id, tags=[f"t{i}"], expected_version=1) for i in range(racers)]

    outcomes = _race(service, store, requests)

    assert sum(isinstance(o, ConflictError) for o in outcomes) == racers - 1
    assert service.get("t1", memory_id).version == 2
