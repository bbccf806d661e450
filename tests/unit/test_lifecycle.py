"""Memory lifecycle: decay, retention, archive → restore, interrupted jobs, TTL expiry (reconcile: test_reconcile)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryArchive, InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import ConfigurationError, InvalidInputError, NotFoundError
from rearview.models import (
    ForgetRequest,
    HistoryAction,
    MemoryFilter,
    MemoryStatus,
    SearchRequest,
    UpdateRequest,
    WriteRequest,
)
from rearview.ports import Archive, IndexQuery, StoreWrite
from rearview.service.lifecycle import (
    JOBS,
    Deadline,
    DecayReport,
    LifecycleConfig,
    LifecycleService,
    LifecycleTimer,
    RetentionReport,
    run_job,
)
from rearview.service.lifecycle.archival import PREVIEW_CHARS, preview
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.service.policy import DecayPolicy, RetentionPolicy, TenantPolicy
from rearview.shared.clock import ManualClock
from rearview.testing import (
    Fault,
    FlakyArchive,
    FlakyCheckpointStore,
    FlakyMemoryIndex,
    FlakyMemoryStore,
    InjectedError,
)
from tests.factories import T0

DAY = timedelta(days=1)


NO_MERGE = ServiceConfig(near_duplicate_threshold=1.01)
"""Similar test sentences must stay separate memories."""


def build(
    clock: ManualClock,
    *,
    store: InMemoryMemoryStore | None = None,
    archive: Archive | None = None,
    index: InMemoryMemoryIndex | None = None,
    config: ServiceConfig = NO_MERGE,
) -> MemoryService:
    return MemoryService(
        store or InMemoryMemoryStore(clock),
        index or InMemoryMemoryIndex(256),
        HashingEmbedder(256),
        clock,
        config,
        archive=archive or InMemoryArchive(),
    )


def jobs(
    service: MemoryService, checkpoints: InMemoryCheckpointStore | None = None, page: int = 7
) -> LifecycleService:
    config = LifecycleConfig(page_size=page, lookahead=DAY)
    return LifecycleService(service, checkpoints or InMemoryCheckpointStore(), config)


def write(service: MemoryService, content: str, **kw: object) -> str:
    return service.write("t1", WriteRequest.model_validate({"content": content, **kw})).memory.id


def status(service: MemoryService, memory_id: str) -> MemoryStatus:
    return service.get("t1", memory_id).status


def copies(archive: Archive, tenant_id: str, ids: Sequence[str]) -> Counter[str]:
    """How many archive objects hold each memory (through the port only)."""
    found: Counter[str] = Counter()
    for ref in archive.iter_refs(tenant_id):
        for memory_id in ids:
            try:
                archive.get(tenant_id, ref, memory_id)
            except NotFoundError:
                continue
            found[memory_id] += 1
    return found


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def service(clock: ManualClock) -> MemoryService:
    return build(clock)


# -------------------------------------------------------------------------------- decay


def test_decay_is_computed_from_the_last_recall_and_never_stored(
    service: MemoryService, clock: ManualClock
) -> None:
    memory_id = write(service, "The staging database is called pelican", importance=3)
    clock.advance(days=30)  # one half-life at importance 3
    assert service.get("t1", memory_id).strength == pytest.approx(0.5)
    lifecycle = jobs(service)
    first, second = lifecycle.decay("t1"), lifecycle.decay("t1")
    assert isinstance(first, DecayReport) and first.complete and first.archived == 0
    # the second run reads nothing: the memory is not due again before it can have faded
    assert (first.scan, first.scanned, second.scan, second.scanned) == ("full", 1, "due", 0)
    stored = service.store.get("t1", memory_id)
    assert stored is not None and (stored.strength, stored.version) == (1.0, 1)  # the anchor is untouched

    service.search("t1", SearchRequest(query="staging database pelican"))  # recall: re-anchored now
    assert service.get("t1", memory_id).strength == pytest.approx(0.5 + 0.1)
    clock.advance(days=60)
    assert service.get("t1", memory_id).strength == pytest.approx(0.6 * 0.25)


def test_a_faded_memory_is_archived_and_importance_five_never_is(
    service: MemoryService, clock: ManualClock
) -> None:
    faded = write(service, "Lunch order on the first Friday was sushi", importance=3)
    kept = write(service, "Never deploy on Fridays", importance=5)
    clock.advance(days=99)
    assert jobs(service).decay("t1").archived == 0  # 1.0 * 0.5**3.3 = 0.101: still above 0.1
    clock.advance(days=2)
    report = jobs(service).decay("t1")
    assert (report.archived, report.protected) == (1, 0)
    assert status(service, faded) is MemoryStatus.ARCHIVED
    history = service.history("t1", faded).events
    assert history[-1].action is HistoryAction.ARCHIVED and (history[-1].note or "").startswith("faded")
    clock.advance(days=2000)
    report = jobs(service).decay("t1")
    assert report.protected == 1 and status(service, kept) is MemoryStatus.ACTIVE


# ---------------------------------------------------------------------------- retention


def test_retention_archives_the_unused_renews_the_recalled_and_keeps_importance_five(
    service: MemoryService, clock: ManualClock
) -> None:
    never = write(service, "Temporary build cache lives in /tmp/bc", importance=1)
    recalled = write(service, "The on-call phone number is 555-0100", importance=1)
    forever = write(service, "The user's name is Ada", importance=5)
    lifecycle = jobs(service)
    renewed = 0
    for day in range(1, 41):
        clock.advance(days=1)
        hits = service.search("t1", SearchRequest(query="on-call phone number", top_k=1)).results
        assert [h.id for h in hits] == [recalled]
        reports = lifecycle.run_all()
        renewed += sum(r.renewed for r in reports if isinstance(r, RetentionReport))
        # nothing ever reads as absent: a memory is active or archived, never silently expired
        assert status(service, never) is (MemoryStatus.ACTIVE if day < 6 else MemoryStatus.ARCHIVED)
        assert status(service, recalled) is MemoryStatus.ACTIVE
        assert status(service, forever) is MemoryStatus.ACTIVE
    assert renewed >= 5  # every ~6 days, the recalled memory's retention was renewed
    note = service.history("t1", never).events[-1].note or ""
    assert note.startswith("retention: expires 2026-01-08")


def test_explicit_ttl_and_working_memory_are_not_renewed(service: MemoryService, clock: ManualClock) -> None:
    ttl = write(service, "The VPN is down today", ttl_days=1.2, importance=4)
    working = write(service, "Scratch: trying approach B", type="working", session_id="s1")
    clock.advance(hours=12)
    service.search("t1", SearchRequest(query="VPN down today approach B scratch"))  # recalls both
    clock.advance(hours=2)
    report = jobs(service).apply_retention("t1")
    assert (report.expiring, report.renewed, report.archived) == (2, 0, 2)
    assert status(service, ttl) is status(service, working) is MemoryStatus.ARCHIVED


def test_tenant_policy_overrides_retention_and_decay(clock: ManualClock) -> None:
    strict = TenantPolicy(
        RetentionPolicy({1: 1.0, 2: 2.0, 3: 30.0, 4: 40.0, 5: None}), DecayPolicy(archive_threshold=0.9)
    )
    service = build(clock, config=ServiceConfig(tenant_policies={"strict": strict}))
    lax = service.write("t1", WriteRequest(content="A fact", importance=3)).memory
    tight = service.write("strict", WriteRequest(content="A fact", importance=3)).memory
    assert lax.expires_at == T0 + 180 * DAY and tight.expires_at == T0 + 30 * DAY
    clock.advance(days=5)  # 0.5 ** (5 / 30) = 0.89: below the strict tenant's 0.9 only
    lifecycle = jobs(service)
    assert lifecycle.decay("strict").archived == 1 and lifecycle.decay("t1").archived == 0


# ------------------------------------------------------------------- archive and restore


def test_archive_restore_search_finds_it_again_with_history_intact(
    service: MemoryService, clock: ManualClock
) -> None:
    long_text = "Deploy runbook: " + " ".join(f"step {i} check the canary dashboards" for i in range(30))
    memory_id = write(service, long_text, importance=2, tags=["ops"], metadata={"team": "infra"})
    clock.advance(hours=1)
    service.update("t1", UpdateRequest(memory_id=memory_id, tags=["ops", "deploy"]))
    before = service.get("t1", memory_id)
    clock.advance(days=29, hours=12)
    assert jobs(service).apply_retention("t1").archived == 1

    stub = service.get("t1", memory_id)
    assert stub.status is MemoryStatus.ARCHIVED and stub.content == preview(long_text)
    assert len(stub.content) <= PREVIEW_CHARS and stub.content.endswith("…")
    assert (stub.tags, stub.metadata, stub.expires_at) == (["ops", "deploy"], {"team": "infra"}, None)
    assert service.index.count("t1") == 0
    assert service.search("t1", SearchRequest(query="deploy runbook canary")).results == []
    archived_hits = service.search(
        "t1",
        SearchRequest(
            query="deploy runbook canary",
            filter=MemoryFilter(statuses=(MemoryStatus.ACTIVE, MemoryStatus.ARCHIVED)),
        ),
    ).results
    assert [(h.id, h.status) for h in archived_hits] == [(memory_id, MemoryStatus.ARCHIVED)]
    assert service.store.get("t1", memory_id).access_count == 0  # not reinforced

    clock.advance(days=3)
    restored = service.restore("t1", memory_id, agent_id="ops-bot")
    assert restored.indexed and restored.memory.status is MemoryStatus.ACTIVE
    memory = restored.memory
    assert (memory.content, memory.tags, memory.metadata) == (long_text, before.tags, before.metadata)
    assert memory.expires_at == clock.now() + 30 * DAY and memory.version == before.version + 2
    actions = [e.action for e in service.history("t1", memory_id).events]
    assert actions == [
        HistoryAction.CREATED,
        HistoryAction.UPDATED,
        HistoryAction.ARCHIVED,
        HistoryAction.RESTORED,
    ]
    hits = service.search("t1", SearchRequest(query="deploy runbook canary dashboards")).results
    assert hits and hits[0].id == memory_id and hits[0].content == long_text
    assert copies(service.archive, "t1", [memory_id]) == Counter()  # copy removed
    with pytest.raises(InvalidInputError):
        service.restore("t1", memory_id)


def test_archiving_and_restoring_a_memory_rebuilds_its_neighbours_keyword_context(
    service: MemoryService, clock: ManualClock
) -> None:
    def keyword(text: str) -> set[str]:
        query = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=10, text=text)
        return {memory_id for memory_id, _ in service.index.search(query).keyword}

    first = write(
        service, "Caroline: we planted the vegetable garden", session_id="s1", type="episodic", importance=5
    )
    clock.advance(seconds=1)
    middle = write(
        service, "Melanie: the zucchini grew enormous", session_id="s1", type="episodic", importance=2
    )
    clock.advance(seconds=1)
    last = write(
        service, "Caroline: the rabbits ate the lettuce", session_id="s1", type="episodic", importance=5
    )
    assert keyword("zucchini") == {first, middle, last}
    clock.advance(days=29, hours=12)  # within a day of the middle one's expiry
    assert jobs(service).apply_retention("t1").archived == 1
    assert keyword("zucchini") == set()  # gone from its neighbours' contexts too
    assert keyword("rabbits") == {first, last}  # which now link to each other
    service.restore("t1", middle)
    assert keyword("zucchini") == {first, middle, last}


def test_restore_errors(service: MemoryService) -> None:
    with pytest.raises(NotFoundError):
        service.restore("t1", "01UNKNOWN")
    active = write(service, "Active memory")
    with pytest.raises(InvalidInputError) as exc:
        service.restore("t1", active)
    assert exc.value.field == "memory_id"


def test_hard_forget_erases_the_archived_copy(service: MemoryService, clock: ManualClock) -> None:
    memory_id = write(service, "The user's home address", importance=1)
    clock.advance(days=6, hours=12)
    jobs(service).apply_retention("t1")
    assert copies(service.archive, "t1", [memory_id])[memory_id] == 1
    service.forget("t1", ForgetRequest(ids=[memory_id], hard=True))
    assert copies(service.archive, "t1", [memory_id]) == Counter()
    with pytest.raises(NotFoundError):
        service.history("t1", memory_id)


def test_forget_by_filter_includes_archived_memories(service: MemoryService, clock: ManualClock) -> None:
    memory_id = write(service, "Session note", type="episodic", session_id="s1", importance=1)
    clock.advance(days=6, hours=12)
    jobs(service).apply_retention("t1")
    result = service.forget("t1", ForgetRequest(filter=MemoryFilter(session_id="s1"), hard=True))
    assert result.forgotten == [memory_id] and list(service.archive.iter_refs("t1")) == []


# ------------------------------------------------------------- interrupted and resumed jobs


N_MEMORIES = 40


@pytest.mark.parametrize(
    ("where", "fail_on"),
    [
        ("store", N_MEMORIES + 2),  # the first stub commit (after N + 1 writes)
        ("store", N_MEMORIES + 12),  # a stub commit in the second page
        ("archive", 2),  # the second page's archive object
        ("index", 3),  # removing the third page from the index
        # saves: 1-2 after the empty working/episodic partitions, then per page: pending, done
        ("checkpoints", 3),  # recording the first page's pending batch
        ("checkpoints", 4),  # the first page's checkpoint, after its stubs landed
        ("checkpoints", 7),  # the third page's pending batch
    ],
)
def test_an_interrupted_job_resumes_with_nothing_archived_twice_or_lost(
    clock: ManualClock, where: str, fail_on: int
) -> None:
    def fault(backend: str) -> Fault:
        return Fault(on_call=fail_on) if where == backend else Fault()

    store = FlakyMemoryStore(fault("store"), clock)
    archive = FlakyArchive(fault("archive"))
    index = FlakyMemoryIndex(fault("index"), 256)
    checkpoints = FlakyCheckpointStore(fault("checkpoints"))
    service = build(clock, store=store, archive=archive, index=index)
    ids = [
        write(service, f"Transient fact number {i} about topic {i * 7}", importance=1)
        for i in range(N_MEMORIES)
    ]
    keep = write(service, "A durable fact", importance=4)
    clock.advance(days=6, hours=12)
    lifecycle = jobs(service, checkpoints, page=7)

    with pytest.raises(InjectedError):
        lifecycle.apply_retention("t1")
    report = lifecycle.apply_retention("t1")

    assert report.complete and report.resumed and len(set(ids)) == N_MEMORIES
    counted = copies(archive, "t1", ids)
    assert all(counted[i] == 1 for i in ids), counted  # each archived exactly once
    for memory_id in ids:  # and never lost: the stub points at the one copy
        stub = store.get("t1", memory_id)
        assert stub is not None and stub.status is MemoryStatus.ARCHIVED and stub.archive_ref
        archive.get("t1", stub.archive_ref, memory_id)
    assert status(service, keep) is MemoryStatus.ACTIVE
    assert index.count("t1") == 1
    again = lifecycle.apply_retention("t1")
    assert (again.archived, again.resumed) == (0, False)


def test_a_memory_changed_during_the_job_is_left_active_and_its_copy_dropped(clock: ManualClock) -> None:
    class RacingStore(InMemoryMemoryStore):
        """Someone updates the memory between the job's read and its stub commit."""

        def commit(self, writes: Sequence[StoreWrite]) -> None:
            if writes and writes[0].memory.status is MemoryStatus.ARCHIVED and not racing_done:
                racing_done.append(True)
                service.update("t1", UpdateRequest(memory_id=writes[0].memory.id, importance=2))
            super().commit(writes)

    racing_done: list[bool] = []
    store = RacingStore(clock)
    service = build(clock, store=store)
    memory_id = write(service, "A fact about to change", importance=1)
    clock.advance(days=6, hours=12)
    report = jobs(service).apply_retention("t1")
    assert (report.archived, report.conflicts) == (0, 1)
    assert status(service, memory_id) is MemoryStatus.ACTIVE
    assert copies(service.archive, "t1", [memory_id]) == Counter()


class Pages:
    """A budget of `n` steps (store pages)."""

    def __init__(self, n: int) -> None:
        self.left = n

    def expired(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_a_job_hands_over_at_its_budget_and_the_next_run_resumes(
    service: MemoryService, clock: ManualClock
) -> None:
    ids = [write(service, f"Short-lived note {i}", importance=1) for i in range(20)]
    clock.advance(days=6, hours=12)
    lifecycle = jobs(service, page=5)
    first = lifecycle.apply_retention("t1", Pages(4))  # 2 empty type partitions, then 2 pages of 5
    assert not first.complete and first.archived == 10
    second = lifecycle.apply_retention("t1", Pages(100))
    assert second.complete and second.resumed and second.archived == 10
    assert all(status(service, i) is MemoryStatus.ARCHIVED for i in ids)


def test_deadline_budget() -> None:
    now = [100.0]
    deadline = Deadline(5, now=lambda: now[0])
    assert not deadline.expired()
    now[0] = 105.0
    assert deadline.expired()
    assert Deadline.from_remaining_ms(60_000, margin_s=15).seconds == 45


def test_run_all_runs_every_tenant_and_run_job_reports(service: MemoryService, clock: ManualClock) -> None:
    for tenant in ("a", "b", "c"):
        service.write(tenant, WriteRequest(content=f"note of {tenant}", importance=1))
    clock.advance(days=6, hours=12)
    run = run_job(
        service, "archive", checkpoints=InMemoryCheckpointStore(), config=LifecycleConfig(lookahead=DAY)
    )
    assert run.complete and [r.tenant_id for r in run.reports] == ["a", "b", "c"]
    assert run.model_dump(mode="json")["reports"][0]["expiring"] == 1  # subclass fields serialized
    assert sum(r.archived for r in run.reports) == 3
    with pytest.raises(InvalidInputError):
        jobs(service).run("compact", "a")


def test_lifecycle_needs_an_archive(clock: ManualClock) -> None:
    plain = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), HashingEmbedder(256), clock)
    with pytest.raises(InvalidInputError):
        LifecycleService(plain, InMemoryCheckpointStore())


# ------------------------------------------------------------------------------ TTL expiry


def test_a_ttl_expired_memory_is_archived_once_and_restorable(
    service: MemoryService, clock: ManualClock
) -> None:
    memory_id = write(service, "Parking spot is B-12", ttl_days=1)
    clock.advance(days=1, hours=1)  # expired: reads as absent until the stream record is handled
    old_image = service.store._memories[("t1", memory_id)]  # what TTL removed
    lifecycle = jobs(service)
    first = lifecycle.handle_expired("t1", old_image)
    assert first.action == "archived" and first.archive_ref
    assert status(service, memory_id) is MemoryStatus.ARCHIVED and service.index.count("t1") == 0
    again = lifecycle.handle_expired("t1", old_image)
    assert again.action == "already_archived" and again.archive_ref == first.archive_ref
    assert copies(service.archive, "t1", [memory_id])[memory_id] == 1
    restored = service.restore("t1", memory_id)
    assert restored.memory.content == "Parking spot is B-12"
    assert [e.action for e in service.history("t1", memory_id).events][-2:] == [
        HistoryAction.ARCHIVED,
        HistoryAction.RESTORED,
    ]
    assert lifecycle.handle_expired("t1", old_image).action == "ignored"  # restored since: left alone
    assert service.index.count("t1") == 1


def test_ttl_expiry_after_the_record_is_gone(service: MemoryService, clock: ManualClock) -> None:
    memory_id = write(service, "Gate code 4411", ttl_days=1)
    clock.advance(days=2)
    old_image = service.store._memories.pop(("t1", memory_id))  # DynamoDB deleted it
    report = jobs(service).handle_expired("t1", old_image)
    assert report.action == "archived"
    events = service.history("t1", memory_id).events
    assert [e.action for e in events] == [HistoryAction.CREATED, HistoryAction.ARCHIVED]
    ref = service.store.get("t1", memory_id).archive_ref
    archived, history = service.archive.get("t1", ref, memory_id)
    assert archived.content == "Gate code 4411" and [e.action for e in history] == [HistoryAction.CREATED]


def test_ttl_expiry_of_a_deleted_memory_is_not_archived(service: MemoryService, clock: ManualClock) -> None:
    memory_id = write(service, "Forget me", ttl_days=1)
    service.forget("t1", ForgetRequest(ids=[memory_id]))
    clock.advance(days=2)
    old_image = service.store._memories[("t1", memory_id)]
    assert jobs(service).handle_expired("t1", old_image).action == "ignored"
    assert list(service.archive.iter_refs("t1")) == []
    with pytest.raises(InvalidInputError):
        jobs(service).handle_expired("t2", old_image)


# ----------------------------------------------------------------------- wiring and timer


def test_settings_tenant_overrides_reach_the_service(tmp_path: Path) -> None:
    from rearview.bootstrap import build_lifecycle, build_service
    from rearview.config.settings import Settings

    config = tmp_path / "config.toml"
    config.write_text(
        '[lifecycle.tenants.acme]\nretention_days = { "3" = 10, "5" = "forever" }\narchive_strength_threshold = 0.5\n'
    )
    settings = Settings.load(
        data_dir=tmp_path / "data",
        config_file=config,
        embedder="hashing",
        retention_days={"1": 2},
        lifecycle_interval_s=0,
    )
    service = build_service(settings)
    assert service.config.policy("acme").retention.days_by_importance[3] == 10
    assert service.config.policy("acme").retention.days_by_importance[1] == 2  # the global setting
    assert service.config.policy("acme").decay.archive_threshold == 0.5
    assert service.config.policy("other").retention.days_by_importance[3] == 180
    lifecycle = build_lifecycle(settings, service)
    service.write("acme", WriteRequest(content="x", importance=1))
    assert lifecycle.run("archive", "acme").complete
    assert (tmp_path / "data" / "lifecycle.sqlite3").exists()

    config.write_text("[lifecycle.tenants.acme]\nunknown = 1\n")
    with pytest.raises(ConfigurationError):
        settings.tenant_lifecycle()


def test_every_job_has_a_cli_command() -> None:
    from rearview.cli.jobs import JOB_HELP

    assert tuple(JOB_HELP) == JOBS


def test_timer_runs_rounds_in_the_background(service: MemoryService, clock: ManualClock) -> None:
    write(service, "Ephemeral", importance=1)
    clock.advance(days=6, hours=12)
    timer = LifecycleTimer(jobs(service), interval_s=0.01, budget_s=5, first_delay_s=0)
    timer.start()
    try:
        for _ in range(500):
            if service.store.stats("t1").by_status.get("archived"):
                break
            import time

            time.sleep(0.01)
    finally:
        timer.stop()
    assert service.store.stats("t1").by_status == {"archived": 1}
    with pytest.raises(InvalidInputError):
        LifecycleTimer(jobs(service), interval_s=0, budget_s=1)


def test_timer_reconciles_what_a_crash_left_out_of_the_index_when_it_starts(service: MemoryService) -> None:
    """Issue 32.8: a store commit whose index write never ran (kill -9 in between) is found at start."""
    memory_id = write(service, "The staging database is called heron-db")
    stranded = service.store.get("t1", memory_id)
    assert stranded is not None
    service.index.delete("t1", [memory_id])  # the crash: committed, never indexed
    assert service.index.count("t1") == 0
    timer = LifecycleTimer(jobs(service), interval_s=3600, budget_s=5, first_delay_s=3600)
    timer.start()
    try:
        for _ in range(500):
            if service.index.count("t1") == 1:
                break
            import time

            time.sleep(0.01)
    finally:
        timer.stop()
    assert service.index.count("t1") == 1
    assert [h.id for h in service.search("t1", SearchRequest(query="staging database name")).results] == [
        memory_id
    ]


def test_preview_cuts_at_a_word() -> None:
    assert preview("short") == "short"
    text = "word " * 100
    cut = preview(text)
    assert len(cut) <= PREVIEW_CHARS and cut.endswith("word…")
    assert math.isclose(len(preview("x" * 1000)), PREVIEW_CHARS)
