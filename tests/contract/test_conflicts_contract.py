"""Unlinked conflicts on every store (issue 47): the older memory's `contested_by` is stored and read back."""

from __future__ import annotations

from rearview.backends.memory import InMemoryMemoryIndex
from rearview.bootstrap import CONFLICT_MIN_SIMILARITIES
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import HistoryAction, SearchRequest, WriteRequest
from rearview.ports import MemoryStore, StoreWrite
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import created, make_memory


def test_contested_by_round_trips_and_an_older_record_reads_uncontested(store: MemoryStore) -> None:
    plain = make_memory("Priya's manager is Tomás Ortega.")
    store.commit([created(plain)])
    assert store.get("t1", plain.id) == plain and plain.contested_by == []
    contested = plain.model_copy(update={"contested_by": ["m-newer", "m-newest"], "version": 2})
    store.commit([StoreWrite(contested, None, 1)])
    assert store.get("t1", plain.id) == contested
    assert [m.contested_by for m in store.get_many("t1", [plain.id])] == [["m-newer", "m-newest"]]


def test_a_conflicting_write_marks_the_stored_older_memory(store: MemoryStore, clock: ManualClock) -> None:
    config = ServiceConfig(conflict_min_similarity=CONFLICT_MIN_SIMILARITIES["hashing"])
    service = MemoryService(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock, config=config)
    old = service.write("t1", WriteRequest(content="Priya's manager is Tomás Ortega."))
    clock.advance(minutes=1)
    new = service.write("t1", WriteRequest(content="Priya's manager is now Hana Kobayashi."))
    assert [c.id for c in new.conflicts] == [old.memory.id]
    stored = store.get("t1", old.memory.id)
    assert stored is not None and stored.contested_by == [new.memory.id] and stored.version == 2
    assert [e.action for e in store.history("t1", old.memory.id)][-1] is HistoryAction.UPDATED
    found = service.search("t1", SearchRequest(query="who is Priya's manager", reinforce=False))
    assert [h.id for h in found.results][:2] == [new.memory.id, old.memory.id]
