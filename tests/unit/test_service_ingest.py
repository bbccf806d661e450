"""`MemoryService.ingest`: messages become memories through the write path, idempotently and in bounds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError
from rearview.limits import MAX_CONTENT_CHARS, MAX_INGEST_CHARS, MAX_INGEST_MESSAGES
from rearview.models import (
    ExtractionMode,
    IngestMessage,
    IngestRequest,
    MemoryFilter,
    MemoryType,
    SearchRequest,
    Visibility,
    WriteRequest,
)
from rearview.ports import IndexQuery, Vector
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from rearview.testing import BrokenEmbedder
from tests.factories import T0


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting its `embed_documents` calls and texts."""

    def __init__(self) -> None:
        super().__init__(256)
        self.calls: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self.calls.append(len(texts))
        return super().embed_documents(texts)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def service(clock: ManualClock, embedder: CountingEmbedder) -> MemoryService:
    return MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), embedder, clock)


def chat(*turns: tuple[str, str], session_id: str = "s1", ids: bool = False) -> IngestRequest:
    messages = [
        IngestMessage(speaker=who, content=text, message_id=f"m{i}" if ids else None)
        for i, (who, text) in enumerate(turns)
    ]
    return IngestRequest(messages=messages, session_id=session_id)


def everything(service: MemoryService) -> list[str]:
    return sorted(m.content for m in service.store.list_memories("t1", MemoryFilter()).items)


def test_each_message_is_an_episode_and_a_self_statement_also_a_linked_fact(service: MemoryService) -> None:
    said = T0 - timedelta(days=30)
    req = IngestRequest(
        session_id="s1",
        messages=[
            IngestMessage(speaker="Ann", content="I prefer aisle seats.", message_id="m1", timestamp=said),
            IngestMessage(role="assistant", content="Noted. I love window seats myself."),
        ],
    )

    result = service.ingest("t1", req)

    assert result.mode is ExtractionMode.RULES and (result.created, result.merged, result.replayed) == (
        3,
        0,
        0,
    )
    first, second = result.messages
    assert first.facts == ["Ann prefers aisle seats"] and second.facts == []
    episode = service.get("t1", first.memory_id)
    assert episode.content == "Ann: I prefer aisle seats."
    assert episode.type is MemoryType.EPISODIC and episode.session_id == "s1" and episode.event_time == said
    assert episode.metadata == {
        "speaker": "Ann",
        "source": "ingest",
        "message_id": "m1",
        "extraction": "rules",
    }
    [fact_id] = [i for i in first.created if i != first.memory_id]
    fact = service.get("t1", fact_id)
    assert fact.type is MemoryType.SEMANTIC and fact.content == "Ann prefers aisle seats"
    assert fact.derived_from == [first.memory_id] and fact.entities == ["Ann"] and fact.session_id == "s1"
    assert fact.metadata["extracted_by"] == "rules" and fact.confidence < 1
    assert fact.metadata["speaker"] == "Ann"  # whose fact it is, for ranking's subject
    assert service.get("t1", second.memory_id).content == "assistant: Noted. I love window seats myself."
    assert service.get("t1", second.memory_id).event_time == T0


def test_chinese_self_statements_become_facts(service: MemoryService) -> None:
    result = service.ingest("t1", chat(("小明", "我喜欢喝乌龙茶。我的猫叫咪咪")))
    assert result.messages[0].facts == ["小明喜欢喝乌龙茶", "小明的猫叫咪咪"]
    assert result.created == 3


def test_all_texts_are_embedded_in_one_call(service: MemoryService, embedder: CountingEmbedder) -> None:
    service.ingest("t1", chat(("Ann", "I like jazz"), ("Bo", "ok"), ("Ann", "my car is red"), ids=True))
    assert embedder.calls == [5]  # 3 episodes and 2 facts, nothing embedded one by one


@pytest.mark.parametrize("ids", [True, False], ids=["by message_id", "by content hash"])
def test_resending_the_same_messages_creates_nothing(service: MemoryService, ids: bool) -> None:
    req = chat(("Ann", "I like jazz"), ("Bo", "Cool, see you at 5"), ids=ids)
    first = service.ingest("t1", req)
    before = everything(service)

    again = service.ingest("t1", req)

    assert everything(service) == before and len(before) == 3
    assert (again.created, again.merged, again.replayed) == (0, 0, 3)
    assert [o.memory_id for o in again.messages] == [o.memory_id for o in first.messages]
    assert again.messages[0].replayed == first.messages[0].created


def test_a_message_id_is_the_identity_even_if_the_text_changes(service: MemoryService) -> None:
    service.ingest(
        "t1",
        IngestRequest(session_id="s1", messages=[IngestMessage(speaker="A", content="hi", message_id="m1")]),
    )
    edited = IngestRequest(
        session_id="s1", messages=[IngestMessage(speaker="A", content="hello", message_id="m1")]
    )
    assert service.ingest("t1", edited).replayed == 1
    assert everything(service) == ["A: hi"]


def test_the_same_message_in_another_session_is_another_turn(service: MemoryService) -> None:
    service.ingest("t1", chat(("Ann", "Cool, see you at 5"), ids=True))
    other = service.ingest("t1", chat(("Ann", "Cool, see you at 5"), session_id="s2", ids=True))
    assert other.replayed == 0  # a new key; the write path then merges the identical episode
    assert other.merged == 1


def test_a_private_ingest_is_seen_by_its_agent_only(service: MemoryService) -> None:
    req = chat(("Ann", "my locker code is 4711")).model_copy(
        update={"agent_id": "bot", "visibility": Visibility.PRIVATE}
    )
    result = service.ingest("t1", req)
    for agent, expected in (("bot", 2), ("other", 0)):
        hits = service.search(
            "t1", SearchRequest(query="locker code", agent_id=agent, reinforce=False)
        ).results
        assert sum(1 + len(h.related) for h in hits) == expected  # the fact and its message, in one place
    assert len(result.messages[0].created) == 2


# ------------------------------------------------------------------------ one place in a search


def search(service: MemoryService, query: str, top_k: int = 10) -> list[tuple[str, list[str]]]:
    hits = service.search("t1", SearchRequest(query=query, top_k=top_k, reinforce=False)).results
    return [(h.content, h.related) for h in hits]


def test_a_fact_and_the_message_it_came_from_take_one_place(service: MemoryService) -> None:
    outcome = service.ingest("t1", chat(("Ann", "my locker code is 4711"))).messages[0]
    service.write("t1", WriteRequest(content="the gym locker room is on floor 2"))

    hits = search(service, "locker code 4711", top_k=2)

    assert len(hits) == 2 and hits[1] == ("the gym locker room is on floor 2", [])
    best, related = hits[0]
    assert {best, *(service.get("t1", i).content for i in related)} == {
        "Ann: my locker code is 4711",
        "Ann's locker code is 4711",
    }
    assert len(related) == 1 and related[0] in outcome.created


def test_two_facts_of_one_message_keep_their_own_places(service: MemoryService) -> None:
    service.ingest("t1", chat(("Ann", "I like jazz. I like tea")))
    hits = search(service, "Ann likes jazz tea")
    contents = sorted(c for c, _ in hits)
    assert len(hits) == 2 and "Ann likes jazz" in contents and "Ann likes tea" in contents
    assert sum(len(r) for _, r in hits) == 1  # the message, folded into the better of the two


def test_a_summary_does_not_collapse_with_its_sources(service: MemoryService) -> None:
    ids = [
        service.write("t1", WriteRequest(content=text, type=MemoryType.EPISODIC, session_id="s9")).memory.id
        for text in ("deployed the billing service", "billing service rollback")
    ]
    summary = service.summarize("t1", session_id="s9").memory
    assert sorted(summary.derived_from) == sorted(ids)
    hits = search(service, "billing service")
    assert len(hits) == 3 and all(related == [] for _, related in hits)


class CountingBrokenEmbedder(BrokenEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self.calls += 1
        return super().embed_documents(texts)


def test_an_embedder_outage_stores_every_message_unindexed_after_one_try(clock: ManualClock) -> None:
    broken = CountingBrokenEmbedder()
    service = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(8), broken, clock)
    result = service.ingest("t1", chat(("Ann", "I like jazz"), ("Bo", "ok")))
    assert result.created == 3 and result.indexed is False
    assert broken.calls == 1  # not once more per memory: an outage must not multiply its timeouts


def big(n: int, size: int = 10) -> IngestRequest:
    return IngestRequest(
        session_id="s1", messages=[IngestMessage(speaker="A", content=f"{i:0{size}d}") for i in range(n)]
    )


@pytest.mark.parametrize(
    ("build", "field", "problem"),
    [
        (lambda: big(MAX_INGEST_MESSAGES + 1), "messages", f"give 1 to {MAX_INGEST_MESSAGES} per call"),
        (lambda: big(0), "messages", "has 0 items"),
        (lambda: big(30, MAX_INGEST_CHARS // 30 + 1), "messages", f"the limit is {MAX_INGEST_CHARS}"),
        (
            lambda: big(1, MAX_CONTENT_CHARS),
            "messages[0].content",
            f"the limit is {MAX_CONTENT_CHARS - 3} for speaker",
        ),
    ],
    ids=["too many messages", "no message", "too many characters", "a message too long with its speaker"],
)
def test_beyond_the_caps_is_invalid_input(
    service: MemoryService, build: Callable[[], IngestRequest], field: str, problem: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        service.ingest("t1", build())
    assert raised.value.field == field and problem in raised.value.problem


def test_a_message_fills_the_content_limit_with_its_speaker_prefix(service: MemoryService) -> None:
    room = MAX_CONTENT_CHARS - len("user: ")
    result = service.ingest(
        "t1", IngestRequest(session_id="s1", messages=[IngestMessage(role="user", content="x" * room)])
    )
    assert [len(m.content) for m in service.store.list_memories("t1", MemoryFilter()).items] == [
        MAX_CONTENT_CHARS
    ]
    assert result.created == 1
    with pytest.raises(InvalidInputError) as raised:
        service.ingest(
            "t1",
            IngestRequest(session_id="s1", messages=[IngestMessage(role="user", content="y" * (room + 1))]),
        )
    assert raised.value.field == "messages[0].content"
    assert f"is {room + 1} characters; the limit is {room} for speaker 'user'" in raised.value.problem


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"content": "hi"}, "messages[1].speaker"),
        ({"speaker": "A", "content": "   "}, "messages[1].content"),
        ({"speaker": "A", "content": "bell\x07"}, "messages[1].content"),
        ({"speaker": "A", "content": "hi", "message_id": "x" * 101}, "messages[1].message_id"),
    ],
)
def test_a_bad_message_writes_nothing_at_all(
    service: MemoryService, message: dict[str, str], field: str
) -> None:
    good = {"speaker": "A", "content": "I like jazz"}
    with pytest.raises(InvalidInputError) as raised:
        service.ingest("t1", IngestRequest.model_validate({"session_id": "s1", "messages": [good, message]}))
    assert raised.value.field == field
    assert everything(service) == []


def test_each_memory_gets_its_own_texts_vector(service: MemoryService, embedder: CountingEmbedder) -> None:
    result = service.ingest("t1", chat(("Ann", "a much longer message than the next one"), ("Bo", "short")))
    for outcome in result.messages:
        memory = service.get("t1", outcome.memory_id)
        hits = service.index.search(
            IndexQuery(
                tenant_id="t1",
                filter=MemoryFilter(),
                limit=1,
                vector=embedder.embed_documents([memory.content])[0],
            )
        )
        assert hits.vector[0] == (memory.id, pytest.approx(1.0, abs=1e-5))
