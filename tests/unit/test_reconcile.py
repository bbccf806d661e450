"""`reconcile`: the index made to agree with the store by version, resumably, counting only real fixes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import ForgetRequest, Memory, MemoryStatus, SearchRequest, UpdateRequest, WriteRequest
from rearview.ports import IndexDocument, MemoryIndex, StoreWrite
from rearview.service.lifecycle import LifecycleConfig, LifecycleService, ReconcileReport
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.shared.clock import ManualClock
from tests.factories import T0

NO_MERGE = ServiceConfig(near_duplicate_threshold=1.01)
"""Similar test sentences must stay separate memories."""


class Steps:
    """A budget of `n` steps (an index page, the count, a store page)."""

    def __init__(self, n: int) -> None:
        self.left = n

    def expired(self) -> bool:
        self.left -= 1
        return self.left < 0


@pytest.fixture(params=["memory", "sqlite"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryService:
    """A service over the in-memory store and each embedded index (versions paging is theirs)."""
    clock = ManualClock(T0)
    index: MemoryIndex = InMemoryMemoryIndex(256)
    if request.param == "sqlite":
        index = SQLiteMemoryIndex(tmp_path / "index.sqlite3", 256)
        index.ensure_schema()
    store, embedder = InMemoryMemoryStore(clock), HashingEmbedder(256)
    return MemoryService(store, index, embedder, clock, NO_MERGE, archive=InMemoryArchive())


def jobs(
    service: MemoryService, checkpoints: InMemoryCheckpointStore | None = None, page: int = 7
) -> LifecycleService:
    config = LifecycleConfig(page_size=page, lookahead=timedelta(days=1))
    return LifecycleService(service, checkpoints or InMemoryCheckpointStore(), config)


def write(service: MemoryService, content: str) -> Memory:
    memory_id = service.write("t1", WriteRequest(content=content, importance=4)).memory.id
    memory = service.store.get("t1", memory_id)
    assert memory is not None
    return memory


def indexed_versions(service: MemoryService) -> dict[str, int]:
    return dict(service.index.versions("t1").items)


def top_hit(service: MemoryService, query: str) -> str:
    return service.search("t1", SearchRequest(query=query)).results[0].content


def test_a_stale_index_document_is_rewritten_from_the_newer_stored_version(service: MemoryService) -> None:
    v1 = write(service, "The staging server IP is 10.0.0.12")
    service.update("t1", UpdateRequest(memory_id=v1.id, content="The staging server IP is 10.0.0.13"))
    # a concurrent writer's older document landed last: the index holds v1, the store v2
    service.index.delete("t1", [v1.id])
    service.index.upsert([IndexDocument(v1, service.embedder.embed_documents([v1.content])[0])])
    assert indexed_versions(service) == {v1.id: 1}  # same count as the store: counting cannot see it

    report = jobs(service).reconcile("t1")

    assert report.complete
    assert (report.stale_fixed, report.orphans_removed, report.missing_indexed) == (1, 0, 0)
    assert indexed_versions(service) == {v1.id: 2}
    assert top_hit(service, "staging server IP") == "The staging server IP is 10.0.0.13"


def test_only_documents_present_in_the_index_count_as_orphans(service: MemoryService) -> None:
    kept = write(service, "Kept and searchable")
    forgotten = write(service, "Soft-forgotten: its document stays, marked deleted, for as-of recall")
    purged = write(service, "Purged from the store, its document left behind")
    dropped = write(service, "Purged and dropped from the index")
    service.forget("t1", ForgetRequest(ids=[forgotten.id]))
    for memory in (purged, dropped):
        service.store.purge("t1", memory.id)
    service.index.delete("t1", [dropped.id])

    report = jobs(service).reconcile("t1")

    assert (report.stale_fixed, report.orphans_removed, report.missing_indexed) == (0, 1, 0)
    assert indexed_versions(service) == {kept.id: kept.version, forgotten.id: forgotten.version + 1}
    assert jobs(service).reconcile("t1").orphans_removed == 0  # consistent now: nothing to do


def test_a_searchable_memory_never_indexed_is_indexed(service: MemoryService) -> None:
    indexed = write(service, "Indexed as written")
    lost = write(service, "Its document was never written")
    service.index.delete("t1", [lost.id])

    report = jobs(service).reconcile("t1")

    assert (report.stale_fixed, report.orphans_removed, report.missing_indexed) == (0, 0, 1)
    assert (report.store_indexed, report.index_documents) == (2, 1)
    assert indexed_versions(service) == {indexed.id: 1, lost.id: 1}
    assert top_hit(service, "never written document") == "Its document was never written"
    assert jobs(service).reconcile("t1").missing_indexed == 0


def test_archived_memories_stay_out_of_the_index(service: MemoryService) -> None:
    archived = write(service, "Archived long ago")
    service.index.delete("t1", [archived.id])
    archived_now = archived.model_copy(update={"status": MemoryStatus.ARCHIVED, "version": 2})
    service.store.commit([StoreWrite(archived_now, None, archived.version)])

    report = jobs(service).reconcile("t1")

    assert (report.orphans_removed, report.missing_indexed, report.store_indexed) == (0, 0, 0)
    assert indexed_versions(service) == {}


def test_reconcile_hands_over_at_its_budget_and_resumes_phase_by_phase(service: MemoryService) -> None:
    memories = [write(service, f"Searchable note {i}") for i in range(3)]
    orphan = write(service, "Purged, its document left behind")
    service.store.purge("t1", orphan.id)
    service.index.delete("t1", [m.id for m in memories[:2]])  # two documents lost
    lifecycle = jobs(service, page=2)
    reports: list[ReconcileReport] = []
    while not reports or not reports[-1].complete:
        reports.append(lifecycle.reconcile("t1", Steps(1)))
        assert len(reports) <= 4
    # one step per run: the index's only page (2 documents), the count, store pages of 2 and 1
    assert [r.resumed for r in reports] == [False, True, True, True]
    assert [r.orphans_removed for r in reports] == [1, 0, 0, 0]
    assert (reports[1].store_indexed, reports[1].index_documents) == (3, 1)
    assert sum(r.missing_indexed for r in reports) == 2
    assert sorted(indexed_versions(service)) == sorted(m.id for m in memories)


@pytest.mark.parametrize(
    "saved",
    [
        '{"phase": 0, "cursor": "MQ==", "started_at": "2026-01-01T00:00:00Z"}',  # dropping, a store cursor
        '{"phase": 2, "started_at": "2026-01-01T00:00:00Z"}',  # re-indexing from the first store page
    ],
)
def test_a_checkpoint_of_the_count_based_reconcile_resumes_cleanly(
    service: MemoryService, saved: str
) -> None:
    memory = write(service, "Searchable note")
    service.index.delete("t1", [memory.id])
    checkpoints = InMemoryCheckpointStore()
    checkpoints.save("t1", "reconcile", saved)

    report = jobs(service, checkpoints).reconcile("t1")

    assert report.complete and report.resumed and report.missing_indexed == 1
    assert indexed_versions(service) == {memory.id: 1}
