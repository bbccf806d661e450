"""The archiving jobs read what is due, not the tenant, on every store (the due orders of `MemoryStore`).

The first run of `decay` or `archive` reads every memory (a `full` scan) and builds the due order;
every later run reads only the memories due (plus those written since, each once), and finds
exactly what a scan of every memory would have found.
"""

from __future__ import annotations

from datetime import timedelta

from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryFilter, MemoryStatus, SearchRequest, WriteRequest
from rearview.ports import MemoryStore
from rearview.service.lifecycle import LifecycleConfig, LifecycleService
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.policy import DEFAULT_DECAY, DecayPolicy, RetentionPolicy, TenantPolicy
from rearview.shared.clock import ManualClock

WORDS = [
    "pelican",
    "harbour",
    "invoice",
    "rust",
    "printer",
    "meeting",
    "lunch",
    "keyboard",
    "python",
    "schema",
    "quota",
    "alert",
]


KEEP_FOREVER = RetentionPolicy(days_by_importance=dict.fromkeys(range(1, 6)))
DECAY_ONLY = ServiceConfig(near_duplicate_threshold=1.01, retention=KEEP_FOREVER)
"""The decay tests' service: nothing expires, so what leaves is what faded."""


def service_over(store: MemoryStore, clock: ManualClock, config: ServiceConfig = DECAY_ONLY) -> MemoryService:
    return MemoryService(
        store, InMemoryMemoryIndex(64), HashingEmbedder(64), clock, config, archive=InMemoryArchive()
    )


def seed(service: MemoryService, clock: ManualClock, n: int = 24) -> list[str]:
    ids = []
    for i in range(n):
        content = f"{WORDS[i % 12]} {WORDS[(i * 5 + 1) % 12]} note number {i}"
        request = WriteRequest(content=content, importance=1 + i % 5, type="semantic")
        ids.append(service.write("t1", request).memory.id)
        clock.advance(hours=20)
    return ids


def active(service: MemoryService) -> list:
    return service.store.list_memories("t1", MemoryFilter(statuses=(MemoryStatus.ACTIVE,)), limit=1000).items


def test_decay_reads_only_what_is_due_and_archives_what_a_full_scan_would(
    store: MemoryStore, clock: ManualClock
) -> None:
    service = service_over(store, clock)
    seed(service, clock)
    lifecycle = LifecycleService(service, InMemoryCheckpointStore(), LifecycleConfig(page_size=5))
    first = lifecycle.decay("t1")
    assert (first.scan, first.scanned, first.archived) == ("full", 24, 0)
    assert lifecycle.decay("t1").scanned == 0  # nothing is due yet

    for days in (30, 10, 20, 60, 100):
        clock.advance(days=days)
        now = clock.now()
        fading = {m.id for m in active(service) if DEFAULT_DECAY.fades(m, now)}  # out of band
        report = lifecycle.decay("t1")
        assert report.scan == "due" and report.complete
        assert report.scanned == len(fading) and report.archived == len(fading)
        assert not {m.id for m in active(service)} & fading
    assert report.archived > 0


def test_a_recalled_memory_is_read_once_when_it_would_have_faded_then_rescheduled(
    store: MemoryStore, clock: ManualClock
) -> None:
    service = service_over(store, clock)
    request = WriteRequest(content="the pelican printer code is 4471", importance=1)
    memory_id = service.write("t1", request).memory.id
    lifecycle = LifecycleService(service, InMemoryCheckpointStore())
    lifecycle.decay("t1")  # full: scheduled to fade in about 23 days
    clock.advance(days=20)
    service.search("t1", SearchRequest(query="pelican printer code"))  # recalled: fades later now
    clock.advance(days=5)
    recheck = lifecycle.decay("t1")
    assert (recheck.scanned, recheck.archived, recheck.scheduled) == (1, 0, 1)  # read, kept, moved on
    assert lifecycle.decay("t1").scanned == 0
    clock.advance(days=30)
    assert lifecycle.decay("t1").archived == 1
    assert store.get("t1", memory_id).status is MemoryStatus.ARCHIVED


def test_a_changed_decay_policy_rebuilds_the_due_order_with_one_full_scan(
    store: MemoryStore, clock: ManualClock
) -> None:
    service = service_over(store, clock)
    seed(service, clock, n=10)
    checkpoints = InMemoryCheckpointStore()
    assert LifecycleService(service, checkpoints).decay("t1").scan == "full"
    assert LifecycleService(service, checkpoints).decay("t1").scan == "due"
    faster = TenantPolicy(decay=DecayPolicy(half_life_days={1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0}))
    changed = service_over(
        store, clock, ServiceConfig(near_duplicate_threshold=1.01, tenant_policies={"t1": faster})
    )
    clock.advance(days=4)
    fading = {m.id for m in active(changed) if faster.decay.fades(m, clock.now())}
    report = LifecycleService(changed, checkpoints).decay("t1")
    assert (report.scan, report.archived) == ("full", len(fading)) and fading
    assert LifecycleService(changed, checkpoints).decay("t1").scan == "due"


def test_archive_reads_only_what_expires_within_the_lookahead(store: MemoryStore, clock: ManualClock) -> None:
    service = service_over(store, clock, ServiceConfig(near_duplicate_threshold=1.01))
    seed(service, clock, n=20)  # the default retention: by importance
    lifecycle = LifecycleService(
        service, InMemoryCheckpointStore(), LifecycleConfig(lookahead=timedelta(days=1))
    )
    assert lifecycle.apply_retention("t1").scan == "full"
    for days in (5, 30, 60, 150):
        clock.advance(days=days)
        horizon = clock.now() + timedelta(days=1)
        expiring = {m.id for m in active(service) if m.expires_at is not None and m.expires_at <= horizon}
        report = lifecycle.apply_retention("t1")
        assert report.scan == "due" and report.scanned == len(expiring)
        assert report.archived + report.renewed == len(expiring)
