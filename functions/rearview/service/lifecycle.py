"""Lifecycle jobs: fade what is no longer used, archive what reached its retention, keep the index honest.

Jobs (each per tenant, each returning a typed report of what it did):

- `decay`: archives memories whose strength, decayed since their last recall, fell below the
  tenant's `DecayPolicy.archive_threshold` (never importance 5). Decay itself is computed,
  not stored (`lifecycle_policy`), so running it twice in a row changes nothing.
- `archive` (retention): memories whose `expires_at` falls before the next run (`lookahead`)
  are archived *before* they expire (an expired memory reads as absent), or renewed when
  they were recalled within their retention (`RetentionPolicy.renewal`).
- `reconcile`: removes index documents of archived/deleted memories, and re-indexes the
  tenant when the index holds fewer documents than the store has searchable memories.
- `handle_expired`: the DynamoDB stream consumer's entry point for a TTL deletion: archives
  the old image (with its history) and drops it from the index.

How they behave:

- **paginated**: one store page (`page_size`) at a time, one memory type after another, over a
  listing whose membership and order the jobs' own writes never change (archived stubs stay
  in it, `updated_at` is kept), so any store cursor stays valid while the job works;
- **resumable**: after every page the position is saved in the `CheckpointStore` (per tenant
  and job); a run that meets its `Budget` stops there and the next run continues;
- **idempotent, nothing archived twice or lost**: each page's archive batch is written first,
  then recorded in the checkpoint as *pending*, then each memory's stub is committed guarded
  by its version. A run interrupted anywhere in between settles the pending batch on resume:
  stubs that landed are kept, memories unchanged since are rolled forward onto the same
  archive object, and copies of memories that changed meanwhile are deleted from the archive.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Protocol

from pydantic import BaseModel, SerializeAsAny

from rearview.clock import to_iso
from rearview.errors import ConflictError, IndexUnavailableError, InvalidInputError, NotFoundError
from rearview.ids import new_id
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryFilter, MemoryStatus, MemoryType
from rearview.ports import Archive, CheckpointStore, IndexDocument, StoreWrite
from rearview.service.archival import ARCHIVABLE_STATUSES, archived_event, archived_stub
from rearview.service.memory_service import MemoryService, snapshot

log = logging.getLogger(__name__)

JobName = Literal["decay", "archive", "reconcile"]
JOBS: tuple[JobName, ...] = ("decay", "archive", "reconcile")
DEFAULT_JOBS: tuple[JobName, ...] = ("decay", "archive")
"""What the schedule (Lambda) and the `rearview serve` timer run by default."""

SCANNED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.ARCHIVED)
"""What the archiving jobs list: archiving moves a memory inside this set, never out of it."""
INDEXED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)
UNINDEXED_STATUSES = (MemoryStatus.ARCHIVED, MemoryStatus.DELETED)


# ----------------------------------------------------------------------------------- budgets


class Budget(Protocol):
    """How long a run may go on; checked before each page."""

    def expired(self) -> bool: ...


class Unlimited:
    """A budget that never runs out (CLI runs, tests)."""

    def expired(self) -> bool:
        return False


@dataclass
class Deadline:
    """A wall-clock budget of `seconds` from construction (monotonic clock)."""

    seconds: float
    now: Callable[[], float] = time.monotonic
    _start: float = field(init=False)

    def __post_init__(self) -> None:
        self._start = self.now()

    @classmethod
    def from_remaining_ms(cls, remaining_ms: int, margin_s: float = 15.0) -> Deadline:
        """A budget that ends `margin_s` before a Lambda invocation would time out."""
        return cls(max(0.0, remaining_ms / 1000 - margin_s))

    def expired(self) -> bool:
        return self.now() - self._start >= self.seconds


# ----------------------------------------------------------------------------------- reports


class JobReport(BaseModel):
    """What one run of one job did for one tenant.

    `complete` is False when the run stopped at its budget: the next run resumes from the
    checkpoint. `resumed` is True when this run continued an unfinished one. `conflicts`
    counts memories that changed while the job worked on them: left as they are, for the
    next run. `recovered` counts memories of an interrupted run's pending archive batch that
    this run settled.
    """

    job: JobName
    tenant_id: str
    started_at: datetime
    finished_at: datetime | None = None
    complete: bool = False
    resumed: bool = False
    pages: int = 0
    scanned: int = 0
    archived: int = 0
    conflicts: int = 0
    recovered: int = 0


class DecayReport(JobReport):
    """`decay`: strengths seen this run; `protected` = below the threshold but importance 5 (kept)."""

    job: JobName = "decay"
    protected: int = 0
    min_strength: float | None = None
    mean_strength: float | None = None


class RetentionReport(JobReport):
    """`archive`: memories found expiring before the next run; `renewed` = kept because recalled."""

    job: JobName = "archive"
    expiring: int = 0
    renewed: int = 0


class ReconcileReport(JobReport):
    """`reconcile`: index documents removed for unindexed memories, and what the counts showed.

    `surplus` > 0 means the index still holds documents the store cannot name (purged or
    expired memories): search ignores them; `rearview reindex` into a fresh index drops them.
    """

    job: JobName = "reconcile"
    orphans_removed: int = 0
    store_indexed: int | None = None
    index_documents: int | None = None
    reindexed: int = 0
    surplus: int = 0


class ExpiryReport(BaseModel):
    """What `handle_expired` did with one TTL-expired memory."""

    tenant_id: str
    memory_id: str
    action: Literal["archived", "already_archived", "ignored"]
    archive_ref: str | None = None
    reason: str


# ------------------------------------------------------------------------------------ state


class _Pending(BaseModel):
    """An archive batch written but not yet known to be committed: memory id -> (version, reason)."""

    ref: str
    versions: dict[str, int]
    reasons: dict[str, str]


class _JobState(BaseModel):
    """The checkpoint of one job for one tenant."""

    phase: int = 0
    cursor: str | None = None
    pending: _Pending | None = None
    started_at: datetime | None = None
    """Set while a run is unfinished."""
    completed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class _Renew:
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class _Archive:
    reason: str


_Decision = _Renew | _Archive | None


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Tunables of the jobs."""

    page_size: int = 100
    """Memories read per store page (and at most archived per archive object)."""
    lookahead: timedelta = timedelta(hours=36)
    """Archive what expires within this much time: at least the interval between runs."""
    reindex_batch: int = 64


# ---------------------------------------------------------------------------------- service


class LifecycleService:
    """The lifecycle jobs over one `MemoryService` (its store, index, embedder, archive and policies)."""

    def __init__(
        self, service: MemoryService, checkpoints: CheckpointStore, config: LifecycleConfig | None = None
    ) -> None:
        if service.archive is None:
            raise InvalidInputError("archive", "lifecycle jobs need an archive (settings.archive)")
        self.service = service
        self.archive: Archive = service.archive
        self.checkpoints = checkpoints
        self.config = config or LifecycleConfig()

    # ------------------------------------------------------------------------------- runs

    def run(self, job: JobName, tenant_id: str, budget: Budget | None = None) -> JobReport:
        """Run (or resume) one job for one tenant until done or out of budget."""
        budget = budget or Unlimited()
        if job == "decay":
            return self.decay(tenant_id, budget)
        if job == "archive":
            return self.apply_retention(tenant_id, budget)
        if job == "reconcile":
            return self.reconcile(tenant_id, budget)
        raise InvalidInputError("job", f"unknown job {job!r}", allowed=JOBS)

    def run_all(
        self,
        jobs: Sequence[JobName] = DEFAULT_JOBS,
        tenants: Sequence[str] | None = None,
        budget: Budget | None = None,
    ) -> list[JobReport]:
        """Run `jobs` for every tenant (default: all), unfinished and least recently finished first.

        Stops when the budget runs out; what is left resumes on the next call, so no tenant
        starves behind a large one.
        """
        budget = budget or Unlimited()
        names = list(tenants) if tenants is not None else self.service.store.tenants()
        reports: list[JobReport] = []
        for tenant_id in sorted(names, key=lambda t: self._urgency(t, jobs)):
            for job in jobs:
                if budget.expired():
                    return reports
                reports.append(self.run(job, tenant_id, budget))
        return reports

    def _urgency(self, tenant_id: str, jobs: Sequence[JobName]) -> tuple[int, float]:
        states = [self._load(tenant_id, job) for job in jobs]
        unfinished = any(s.started_at is not None for s in states)
        finished = [s.completed_at.timestamp() for s in states if s.completed_at is not None]
        return (0 if unfinished else 1, min(finished) if len(finished) == len(states) else 0.0)

    # ------------------------------------------------------------------------------ decay

    def decay(self, tenant_id: str, budget: Budget | None = None) -> DecayReport:
        """Archive the tenant's memories whose decayed strength is below the threshold."""
        decay = self.service.config.policy(tenant_id).decay
        report = DecayReport(tenant_id=tenant_id, started_at=self._now())

        def decide(memory: Memory, now: datetime) -> _Decision:
            strength = decay.effective(memory, now)
            mean = report.mean_strength or 0.0
            report.mean_strength = mean + (strength - mean) / report.scanned  # running mean
            report.min_strength = (
                strength if report.min_strength is None else min(report.min_strength, strength)
            )
            if strength >= decay.archive_threshold:
                return None
            if memory.importance >= decay.protected_importance:
                report.protected += 1
                return None
            return _Archive(f"faded: strength {strength:.3f} < {decay.archive_threshold}")

        self._scan("decay", tenant_id, budget or Unlimited(), decide, report)
        return report

    # -------------------------------------------------------------------------- retention

    def apply_retention(self, tenant_id: str, budget: Budget | None = None) -> RetentionReport:
        """Archive (or renew, if recalled) the tenant's memories that expire before the next run."""
        retention = self.service.config.policy(tenant_id).retention
        lookahead = self.config.lookahead
        report = RetentionReport(tenant_id=tenant_id, started_at=self._now())

        def decide(memory: Memory, now: datetime) -> _Decision:
            if memory.expires_at is None or memory.expires_at > now + lookahead:
                return None
            report.expiring += 1
            renewed = retention.renewal(memory, now, lookahead)
            if renewed is not None:
                return _Renew(renewed)
            return _Archive(f"retention: expires {to_iso(memory.expires_at)}")

        self._scan("archive", tenant_id, budget or Unlimited(), decide, report)
        return report

    # ------------------------------------------------------------------------------- scan

    def _scan(
        self,
        job: JobName,
        tenant_id: str,
        budget: Budget,
        decide: Callable[[Memory, datetime], _Decision],
        report: JobReport,
    ) -> None:
        state = self._load(tenant_id, job)
        report.resumed = state.started_at is not None
        if not report.resumed:
            state = _JobState(started_at=report.started_at, completed_at=state.completed_at)
        if state.pending is not None:
            self._settle(tenant_id, state.pending, report)
            state.pending = None
            self._save(tenant_id, job, state)
        types = tuple(MemoryType)
        while state.phase < len(types):
            if budget.expired():
                self._save(tenant_id, job, state)
                report.finished_at = self._now()
                return
            flt = MemoryFilter(types=(types[state.phase],), statuses=SCANNED_STATUSES)
            page = self.service.store.list(tenant_id, flt, cursor=state.cursor, limit=self.config.page_size)
            self._process(job, tenant_id, state, page.items, decide, report)
            report.pages += 1
            state.cursor = page.cursor
            if state.cursor is None:
                state.phase += 1
            self._save(tenant_id, job, state)
        self._finish(tenant_id, job, report)

    def _process(
        self,
        job: JobName,
        tenant_id: str,
        state: _JobState,
        items: Sequence[Memory],
        decide: Callable[[Memory, datetime], _Decision],
        report: JobReport,
    ) -> None:
        now = self._now()
        batch: list[tuple[Memory, str]] = []
        for memory in items:
            if memory.status is MemoryStatus.ARCHIVED:
                continue
            report.scanned += 1
            decision = decide(memory, now)
            if isinstance(decision, _Archive):
                batch.append((memory, decision.reason))
            elif isinstance(decision, _Renew):
                self._renew(memory, decision.expires_at, now, report)
        if batch:
            self._archive_batch(job, tenant_id, state, batch, now, report)

    def _renew(self, memory: Memory, expires_at: datetime, now: datetime, report: JobReport) -> None:
        renewed = memory.model_copy(
            update={"expires_at": expires_at, "updated_at": now, "version": memory.version + 1}
        )
        event = HistoryEvent(
            id=new_id(now), tenant_id=memory.tenant_id, memory_id=memory.id, action=HistoryAction.UPDATED,
            at=now, actor="lifecycle", before=snapshot(memory), after=snapshot(renewed),
            note=f"retention renewed until {to_iso(expires_at)}: recalled {to_iso(memory.last_accessed_at)}",
        )  # fmt: skip
        try:
            self.service.store.commit([StoreWrite(renewed, event, memory.version)])
        except ConflictError:
            report.conflicts += 1
            return
        if isinstance(report, RetentionReport):
            report.renewed += 1

    def _archive_batch(
        self,
        job: JobName,
        tenant_id: str,
        state: _JobState,
        batch: Sequence[tuple[Memory, str]],
        now: datetime,
        report: JobReport,
    ) -> None:
        store = self.service.store
        entries = [(memory, store.history(tenant_id, memory.id)) for memory, _ in batch]
        ref = self.archive.put(tenant_id, entries)
        state.pending = _Pending(
            ref=ref,
            versions={m.id: m.version for m, _ in batch},
            reasons={m.id: reason for m, reason in batch},
        )
        try:
            self._save(tenant_id, job, state)
        except Exception:  # not recorded as pending: take the batch back so a rerun cannot copy it twice
            state.pending = None
            for memory, _ in batch:
                self.archive.delete(tenant_id, ref, memory.id)
            raise
        archived: list[str] = []
        for memory, reason in batch:
            if self._commit_stub(memory, ref, reason, now, memory.version):
                archived.append(memory.id)
            else:
                self.archive.delete(tenant_id, ref, memory.id)
                report.conflicts += 1
        self._drop_from_index(tenant_id, archived)
        report.archived += len(archived)
        state.pending = None

    def _commit_stub(
        self, memory: Memory, ref: str, reason: str, now: datetime, expected: int | None
    ) -> bool:
        """Put the memory's archived stub in its place; False if the store's version is not `expected`.

        `expected=None` inserts the stub (the record is gone, e.g. removed by TTL).
        """
        event = archived_event(memory, ref, reason, now)
        try:
            self.service.store.commit([StoreWrite(archived_stub(memory, ref), event, expected)])
        except ConflictError:
            return False
        return True

    def _settle(self, tenant_id: str, pending: _Pending, report: JobReport) -> None:
        """Finish an interrupted archive batch: keep what landed, roll forward the rest or drop its copy."""
        store = self.service.store
        now = self._now()
        settled: list[str] = []
        for memory_id in pending.versions:
            current = store.get(tenant_id, memory_id)
            if current is not None and current.archive_ref == pending.ref:
                settled.append(memory_id)  # its stub landed before the interruption
                continue
            if self._roll_forward(tenant_id, pending, memory_id, current, now):
                settled.append(memory_id)
                report.archived += 1
            else:
                self.archive.delete(tenant_id, pending.ref, memory_id)  # changed since: the copy is stale
                report.conflicts += 1
        self._drop_from_index(tenant_id, settled)
        report.recovered += len(pending.versions)

    def _roll_forward(
        self, tenant_id: str, pending: _Pending, memory_id: str, current: Memory | None, now: datetime
    ) -> bool:
        """Commit the stub of a pending memory that is still the version that was archived."""
        source = current or self._archived_copy(tenant_id, pending.ref, memory_id)  # None: expired or gone
        version = pending.versions[memory_id]
        if source is None or source.version != version or source.status not in ARCHIVABLE_STATUSES:
            return False
        reason = pending.reasons.get(memory_id, "archived")
        return self._commit_stub(source, pending.ref, reason, now, version)

    def _archived_copy(self, tenant_id: str, ref: str, memory_id: str) -> Memory | None:
        try:
            memory, _ = self.archive.get(tenant_id, ref, memory_id)
        except NotFoundError:
            return None
        return memory

    # ------------------------------------------------------------------------- TTL stream

    def handle_expired(self, tenant_id: str, old_image: Memory) -> ExpiryReport:
        """Archive a memory the store's TTL removed (a DynamoDB stream REMOVE old image); idempotent.

        The old image and the history still in the store go to the archive; a stub (status
        `archived`, pointing at the archive object) takes the memory's place, so `memory_restore`
        and `include_archived` find it; the index document is dropped. A repeated record finds
        the stub and only re-drops the index document. Soft-deleted memories are not archived.
        """
        if old_image.tenant_id != tenant_id:
            raise InvalidInputError(
                "old_image", f"belongs to tenant {old_image.tenant_id!r}, not {tenant_id!r}"
            )
        memory_id = old_image.id
        report = ExpiryReport(tenant_id=tenant_id, memory_id=memory_id, action="ignored", reason="")
        current = self.service.store.get(tenant_id, memory_id)
        if current is not None:
            return self._already(report, current)
        self._drop_from_index(tenant_id, [memory_id])
        if old_image.status not in ARCHIVABLE_STATUSES:
            return report.model_copy(update={"reason": f"status {old_image.status.value}: nothing to keep"})
        now = self._now()
        reason = f"expired (TTL) at {to_iso(old_image.expires_at or now)}"
        ref = self.archive.put(tenant_id, [(old_image, self.service.store.history(tenant_id, memory_id))])
        landed = self._commit_stub(old_image, ref, reason, now, None)
        if not landed:  # the expired record may still be physically there, at its last version
            landed = self._commit_stub(old_image, ref, reason, now, old_image.version)
        if not landed:
            self.archive.delete(tenant_id, ref, memory_id)
            current = self.service.store.get(tenant_id, memory_id)
            if current is not None:
                return self._already(report, current)
            return report.model_copy(update={"reason": "the store changed it concurrently"})
        return report.model_copy(update={"action": "archived", "archive_ref": ref, "reason": reason})

    def _already(self, report: ExpiryReport, current: Memory) -> ExpiryReport:
        """A repeated (or overtaken) expiry: the stub exists, or the memory lives again (left alone)."""
        if current.status is not MemoryStatus.ARCHIVED:
            reason = f"memory is {current.status.value} again (v{current.version})"
            return report.model_copy(update={"reason": reason})
        self._drop_from_index(report.tenant_id, [report.memory_id])
        update = {"action": "already_archived", "archive_ref": current.archive_ref, "reason": "stub exists"}
        return report.model_copy(update=update)

    # -------------------------------------------------------------------------- reconcile

    def reconcile(self, tenant_id: str, budget: Budget | None = None) -> ReconcileReport:
        """Make the index agree with the store for one tenant (phases resume like the scans).

        Phase 0 drops the index documents of archived and deleted memories; phase 1 compares
        the index's document count with the store's searchable memories; phase 2 (only if the
        index holds fewer) re-embeds and upserts every searchable memory.
        """
        budget = budget or Unlimited()
        report = ReconcileReport(tenant_id=tenant_id, started_at=self._now())
        state = self._load(tenant_id, "reconcile")
        report.resumed = state.started_at is not None
        if not report.resumed:
            state = _JobState(started_at=report.started_at, completed_at=state.completed_at)
        while state.phase < 3:
            if budget.expired():
                self._save(tenant_id, "reconcile", state)
                report.finished_at = self._now()
                return report
            if state.phase == 1:
                state.phase = 2 if self._count_drift(tenant_id, report) else 3
            else:
                statuses = UNINDEXED_STATUSES if state.phase == 0 else INDEXED_STATUSES
                page = self.service.store.list(
                    tenant_id,
                    MemoryFilter(statuses=statuses),
                    cursor=state.cursor,
                    limit=self.config.page_size,
                )
                self._reconcile_page(tenant_id, state.phase, page.items, report)
                report.pages += 1
                state.cursor = page.cursor
                if state.cursor is None:
                    state.phase = 1 if state.phase == 0 else 3
            self._save(tenant_id, "reconcile", state)
        self._finish(tenant_id, "reconcile", report)
        return report

    def _count_drift(self, tenant_id: str, report: ReconcileReport) -> bool:
        by_status = self.service.store.stats(tenant_id).by_status
        report.store_indexed = sum(by_status.get(s.value, 0) for s in INDEXED_STATUSES)
        report.index_documents = self.service.index.count(tenant_id)
        report.surplus = max(0, report.index_documents - report.store_indexed)
        return report.index_documents < report.store_indexed

    def _reconcile_page(
        self, tenant_id: str, phase: int, items: Sequence[Memory], report: ReconcileReport
    ) -> None:
        report.scanned += len(items)
        if not items:
            return
        if phase == 0:
            self.service.index.delete(tenant_id, [m.id for m in items])
            report.orphans_removed += len(items)
            return
        for start in range(0, len(items), self.config.reindex_batch):
            chunk = items[start : start + self.config.reindex_batch]
            vectors = self.service.embedder.embed_documents([m.content for m in chunk])
            self.service.index.upsert([IndexDocument(m, vectors[i]) for i, m in enumerate(chunk)])
            report.reindexed += len(chunk)

    # ---------------------------------------------------------------------------- helpers

    def _now(self) -> datetime:
        return self.service.clock.now()

    def _load(self, tenant_id: str, job: JobName) -> _JobState:
        raw = self.checkpoints.load(tenant_id, job)
        return _JobState.model_validate_json(raw) if raw else _JobState()

    def _save(self, tenant_id: str, job: JobName, state: _JobState) -> None:
        self.checkpoints.save(tenant_id, job, state.model_dump_json())

    def _finish(self, tenant_id: str, job: JobName, report: JobReport) -> None:
        report.finished_at = self._now()
        report.complete = True
        self._save(tenant_id, job, _JobState(completed_at=report.finished_at))

    def _drop_from_index(self, tenant_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        try:
            self.service.index.delete(tenant_id, ids)
        except IndexUnavailableError as exc:
            log.warning("index delete failed; `rearview reconcile` will repair: %s", exc)


class LifecycleRun(BaseModel):
    """The reports of one `run_job` call; `complete` is False when a run stopped at its budget."""

    job: JobName
    complete: bool
    reports: list[SerializeAsAny[JobReport]]


# ------------------------------------------------------------------------------- entry points
# What the Lambda handlers call (`handlers/jobs.py`, `handlers/stream.py`): a plain function over
# a MemoryService, so a handler stays a parse-call-render adapter.

_process_checkpoints: CheckpointStore | None = None


def run_job(
    service: MemoryService,
    job: JobName,
    tenant_id: str | None = None,
    *,
    budget: Budget | None = None,
    checkpoints: CheckpointStore | None = None,
    config: LifecycleConfig | None = None,
) -> LifecycleRun:
    """Run `job` for one tenant, or for every tenant when `tenant_id` is None, within `budget`.

    Pass `budget=Deadline.from_remaining_ms(context.get_remaining_time_in_millis())` from a
    Lambda handler so the run hands over before the timeout. `checkpoints` defaults to one
    in-memory store per process (progress survives warm invocations only).
    """
    lifecycle = LifecycleService(service, checkpoints or _default_checkpoints(), config)
    tenants = [tenant_id] if tenant_id is not None else None
    reports = lifecycle.run_all([job], tenants=tenants, budget=budget)
    return LifecycleRun(job=job, complete=all(r.complete for r in reports), reports=reports)


def on_expired(service: MemoryService, memory: Memory) -> ExpiryReport:
    """`LifecycleService.handle_expired` for one TTL-expired memory (the stream consumer's call)."""
    return LifecycleService(service, _default_checkpoints()).handle_expired(memory.tenant_id, memory)


def _default_checkpoints() -> CheckpointStore:
    global _process_checkpoints  # noqa: PLW0603 -- one store per process, created on first use
    if _process_checkpoints is None:
        from rearview.backends.memory_checkpoints import InMemoryCheckpointStore

        _process_checkpoints = InMemoryCheckpointStore()
    return _process_checkpoints


# ------------------------------------------------------------------------------------ timer


class LifecycleTimer:
    """Runs `LifecycleService.run_all` every `interval_s` in a daemon thread (for `rearview serve`).

    The first run starts `first_delay_s` after `start()`. A failing run is logged and the timer
    goes on; `stop()` asks the thread to finish after the current page at the latest.
    """

    def __init__(
        self,
        lifecycle: LifecycleService,
        interval_s: float,
        budget_s: float,
        jobs: Sequence[JobName] = DEFAULT_JOBS,
        first_delay_s: float = 60.0,
    ) -> None:
        if interval_s <= 0:
            raise InvalidInputError(
                "lifecycle_interval_s", f"must be > 0 to start a timer (got {interval_s})"
            )
        self.lifecycle = lifecycle
        self.interval_s = interval_s
        self.budget_s = budget_s
        self.jobs = tuple(jobs)
        self.first_delay_s = min(first_delay_s, interval_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rearview-lifecycle", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to stop and wait up to `timeout` seconds for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_once(self) -> list[JobReport]:
        """One round of every job for every tenant, within `budget_s` (stops early on `stop()`)."""
        budget = _Stoppable(Deadline(self.budget_s), self._stop)
        reports = self.lifecycle.run_all(self.jobs, budget=budget)
        for report in reports:
            log.info("lifecycle %s", report.model_dump_json())
        return reports

    def _loop(self) -> None:
        delay = self.first_delay_s
        while not self._stop.wait(delay):
            try:
                self.run_once()
            except Exception:  # a failed round must not end the timer: the next one resumes
                log.exception("lifecycle round failed; the next round resumes from the checkpoints")
            delay = self.interval_s


@dataclass
class _Stoppable:
    deadline: Deadline
    stop: threading.Event

    def expired(self) -> bool:
        return self.stop.is_set() or self.deadline.expired()
