"""`WriteBatch`: an ingest committed in chunks stores and indexes exactly what one write at a time does."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import ConflictError
from rearview.models import (
    IngestMessage,
    IngestRequest,
    IngestResult,
    Memory,
    MemoryFilter,
    WriteRequest,
    WriteResult,
)
from rearview.ports import MAX_WRITES_PER_COMMIT, Embedder, IndexDocument
from rearview.service.ingest.ingester import Ingester
from rearview.service.memory_service import MemoryService
from rearview.service.write.batch import WriteBatch
from rearview.service.write.decision import Embedded
from rearview.service.write.writer import Writer
from rearview.shared.clock import ManualClock
from rearview.shared.lazy import Lazy
from rearview.testing import BrokenEmbedder, Fault, FlakyMemoryStore, InjectedError
from tests.factories import T0


class TickingClock(ManualClock):
    """A test clock that moves 1 ms per reading: every write gets its own time, so write order is fixed."""

    def now(self) -> datetime:
        return self.advance(milliseconds=1)


class OneByOne:
    """The reference: each write through `Writer.write` (commit, index, neighbours), nothing gathered."""

    def __init__(self, writer: Writer, tenant_id: str) -> None:
        self.writer, self.tenant_id, self.indexed = writer, tenant_id, True

    def write(self, req: WriteRequest, embedded: Embedded, judge: bool | None = None) -> WriteResult:
        result = self.writer.write(self.tenant_id, req, embedded, judge=judge)
        self.indexed = self.indexed and result.indexed
        return result

    def look_up(self, requests: Sequence[WriteRequest]) -> None:
        """Nothing: each write reads its key, as `Writer.write` does."""

    def flush(self) -> bool:
        return self.indexed


class CountingIndex(InMemoryMemoryIndex):
    """The in-memory index, counting its `upsert` calls and documents."""

    def __init__(self) -> None:
        super().__init__(256)
        self.upserts: list[int] = []

    def upsert(self, docs: list[IndexDocument]) -> None:  # type: ignore[override]
        self.upserts.append(len(docs))
        super().upsert(docs)


def _service(
    store: InMemoryMemoryStore | None = None, *, one_by_one: bool = False, embedder: Embedder | None = None
) -> MemoryService:
    clock = TickingClock(T0)
    embedder = embedder or HashingEmbedder(256)
    service = MemoryService(store or InMemoryMemoryStore(clock), CountingIndex(), embedder, clock)
    if one_by_one:
        writer, extractor = service._writer.get(), service._ingester.get().extractor
        service._ingester = Lazy(lambda: Ingester(writer, extractor, lambda t: OneByOne(writer, t)))
    return service


def conversation(n: int = 70) -> IngestRequest:
    """Turns with repeats (exact and reworded), self-statements (facts) and a gap that splits the context."""
    lines = [
        ("Ann", "I prefer aisle seats."),
        ("Bo", "We adopted a puppy named Rex last week"),
        ("Ann", "Does Rex chew everything?"),
        ("Bo", "We adopted a puppy named Rex last week"),  # an exact repeat: merged
        ("Ann", "My sister's name is Carla."),
        ("Bo", "We adopted a puppy named Rex last week!"),  # the same once normalized
    ]
    messages = []
    for i in range(n):
        who, text = (
            lines[i % len(lines)] if i < 12 else ("Ann" if i % 2 else "Bo", f"turn {i} about topic {i % 7}")
        )
        hours = i * 0.1 + (8 if i >= 40 else 0)  # a gap longer than the context's between turns 39 and 40
        messages.append(
            IngestMessage(
                speaker=who, content=text, message_id=f"m{i}", timestamp=T0 + timedelta(hours=hours)
            )
        )
    return IngestRequest(session_id="s1", messages=messages)


def distinct(n: int) -> IngestRequest:
    """`n` turns that neither repeat each other nor state a fact."""
    messages = [IngestMessage(speaker="Bo", content=f"turn {i} about topic {i}") for i in range(n)]
    return IngestRequest(session_id="s1", messages=messages)


def snapshot(service: MemoryService, result: IngestResult) -> tuple[object, ...]:
    """What the ingest did and left, with memory ids replaced by each message's index (ids differ by run)."""
    name = {o.memory_id: f"episode {o.index}" for o in result.messages}
    memories = service.store.list_memories(
        "t1", MemoryFilter(statuses=tuple(MemoryFilter().statuses)), limit=500
    )
    for m in memories.items:
        name.setdefault(m.id, f"fact {m.content}")
    stored = sorted(
        (
            name[m.id],
            m.content,
            m.type.value,
            m.status.value,
            m.version,
            tuple(name[s] for s in m.derived_from),
        )
        for m in memories.items
    )
    index = service.index
    assert isinstance(index, InMemoryMemoryIndex)
    indexed = sorted(
        (name[memory_id], tuple(doc.body), tuple(doc.context), doc.memory.version)
        for (_, memory_id), doc in index._docs.items()
    )
    outcomes = [
        (o.index, len(o.created), len(o.merged), len(o.replayed), len(o.superseded), o.facts)
        for o in result.messages
    ]
    counts = (result.created, result.merged, result.replayed, result.superseded)
    return counts, outcomes, stored, indexed


@pytest.mark.parametrize("embedder", [HashingEmbedder, BrokenEmbedder], ids=["embedded", "embedder down"])
def test_a_chunked_ingest_stores_and_indexes_what_one_write_at_a_time_does(embedder: type[Embedder]) -> None:
    """Down, no vector tells a repeat apart: the exact-duplicate check alone must see the chunk's memories."""
    chunked = _service(embedder=embedder(256))
    reference = _service(one_by_one=True, embedder=embedder(256))
    got = snapshot(chunked, chunked.ingest("t1", conversation()))
    want = snapshot(reference, reference.ingest("t1", conversation()))
    assert got == want
    # Turns 3 and 5 repeat turn 1, turns 6-11 repeat 0-5 (and their 2 facts): 10 merges, 62 + 2 created.
    assert got[0][:2] == (64, 10)


def test_a_chunked_ingest_commits_and_indexes_a_chunk_at_a_time() -> None:
    store = FlakyMemoryStore(Fault(), TickingClock(T0))  # a healthy store that counts its commits
    service = _service(store)
    result = service.ingest("t1", distinct(60))
    index = service.index
    assert isinstance(index, CountingIndex)
    assert result.created == 60 and result.indexed
    assert store.fault.calls == len(index.upserts) == -(-60 // MAX_WRITES_PER_COMMIT)  # 19 + 19 + 19 + 3


def test_resending_after_a_failed_chunk_writes_each_message_once() -> None:
    fault = Fault(on_call=2)  # the second commit (the second chunk) fails, before anything of it lands
    store = FlakyMemoryStore(fault, TickingClock(T0))
    service = _service(store)
    req = distinct(60)
    with pytest.raises(InjectedError):
        service.ingest("t1", req)
    first = service.store.list_memories("t1", MemoryFilter(), limit=500).items
    assert len(first) == MAX_WRITES_PER_COMMIT  # the first chunk whole, nothing of the second
    assert {m.id for m in first} == {
        d.memory.id for d in _indexed(service)
    }  # the index holds what the store does

    again = service.ingest("t1", req)
    assert again.replayed == MAX_WRITES_PER_COMMIT and again.indexed
    reference = _service(one_by_one=True)
    want = snapshot(reference, reference.ingest("t1", req))
    assert snapshot(service, again)[2:] == want[2:]  # the same memories, contexts and versions


def _indexed(service: MemoryService) -> list[IndexDocument]:
    index = service.index
    assert isinstance(index, InMemoryMemoryIndex)
    return [IndexDocument(d.memory, d.vector) for d in index._docs.values()]


def test_a_batch_refuses_a_chunk_no_store_guarantees() -> None:
    with pytest.raises(ValueError, match="chunk must be"):
        WriteBatch(_service()._writer.get(), "t1", chunk=MAX_WRITES_PER_COMMIT + 1)


def test_nothing_is_stored_before_flush() -> None:
    service = _service()
    batch = WriteBatch(service._writer.get(), "t1")
    result = batch.write(WriteRequest(content="Ann likes jazz", session_id="s1"), Embedded(None))
    assert service.store.get("t1", result.memory.id) is None
    assert batch.flush() is False  # stored, but without a vector: unindexed
    assert service.store.get("t1", result.memory.id) is not None


def test_an_ingest_that_loses_a_chunk_to_a_concurrent_writer_writes_again_and_replays() -> None:
    """As one write at a time did: a create that lost its idempotency key to a racer answers replayed."""
    store = FlakyMemoryStore(Fault(on_call=2, error=lambda _: ConflictError("m", None, 1)), TickingClock(T0))
    service = _service(store)
    result = service.ingest("t1", distinct(60))
    assert (result.created, result.replayed) == (60 - MAX_WRITES_PER_COMMIT, MAX_WRITES_PER_COMMIT)
    assert len(service.store.list_memories("t1", MemoryFilter(), limit=500).items) == 60


class KeyCountingStore(InMemoryMemoryStore):
    """The in-memory store, counting its idempotency-key reads: one key at a time, and many at once."""

    def __init__(self) -> None:
        super().__init__(TickingClock(T0))
        self.single = 0
        self.batched: list[int] = []

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        self.single += 1  # the base class answers through the batch method: not a batched call
        return InMemoryMemoryStore.find_by_idempotency_keys(self, tenant_id, [key]).get(key)

    def find_by_idempotency_keys(self, tenant_id: str, keys: Sequence[str]) -> dict[str, Memory]:
        self.batched.append(len(keys))
        return super().find_by_idempotency_keys(tenant_id, keys)


def test_an_ingest_reads_its_idempotency_keys_once_not_per_message() -> None:
    store = KeyCountingStore()
    service = _service(store)
    first = service.ingest("t1", conversation(70))
    keys = 70 + len([f for o in first.messages for f in o.facts])  # an episode per message, and the facts
    assert (store.batched, store.single) == ([keys], 0)
    again = service.ingest("t1", conversation(70))
    assert again.created == 0 and [o.memory_id for o in again.messages] == [
        o.memory_id for o in first.messages
    ]
    assert (store.batched, store.single) == ([keys, keys], 0)  # every replay answered by the one read


def test_a_message_sent_twice_in_one_call_is_read_again_after_its_first_write() -> None:
    store = KeyCountingStore()
    service = _service(store)
    twice = IngestMessage(speaker="Bo", content="We adopted a puppy", message_id="m1")
    result = service.ingest("t1", IngestRequest(session_id="s1", messages=[twice, twice]))
    assert result.messages[1].replayed == [result.messages[0].memory_id] and result.created == 1
    assert (store.batched, store.single) == ([1], 1)  # the repeat asks the store, which now has it
