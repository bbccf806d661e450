"""The archiving scan that `decay` and `archive` share, and the stub commit that `handle_expired` uses too.

The scan reads one of two ways, chosen when a run starts (`JobState.scan`):

- `due` (every run once the store's due order is built): the store's due listing for the rule's
  job (`MemoryStore.list_due`): the memories expiring within the look-ahead (`archive`) or due
  for a decay check (`decay`), so a run reads what is due, not the tenant. The decay job moves
  each memory it keeps to the time it will have faded (`DecayPolicy.fades_at`; recalls only
  postpone that, a write makes it due again): a memory is read again when it may be due.
- `full` (the first run, or the first after the decay policy changed: its fingerprint differs
  from `JobState.schedule`): one memory type after another (`phase` = the position of the type
  in `SCAN_TYPES`); it schedules every memory it keeps, which builds the due order.

Either listing's cursor stays valid under the scan's own writes: the full listing's membership
and order never change (archived stubs stay in `SCANNED_STATUSES`, `updated_at` is kept), and
the due listing resumes strictly after the last position read, while the scan only removes
memories from it or moves them later.

Nothing is archived twice or lost: each page's archive batch is written first, then recorded
in the checkpoint as *pending*, then each memory's stub is committed guarded by its version.
A run interrupted anywhere in between settles the pending batch on resume: stubs that landed
are kept, memories unchanged since are rolled forward onto the same archive object, and
copies of memories that changed meanwhile are deleted from the archive.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from rearview.errors import ConflictError, NotFoundError
from rearview.models import Memory, MemoryFilter, MemoryStatus, MemoryType
from rearview.ports import DueAt, DueJob, StoreWrite
from rearview.service import indexing, keyword_context
from rearview.service.lifecycle.archival import ARCHIVABLE_STATUSES, archived_event, archived_stub
from rearview.service.lifecycle.context import JobContext
from rearview.service.lifecycle.reports import JobReport
from rearview.service.lifecycle.runner import Checkpoint, JobState, Pending
from rearview.service.policy import DecayPolicy

SCAN_TYPES = tuple(MemoryType)
"""The scan's phases, in order: one listing per memory type."""
SCANNED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.ARCHIVED)
"""What the archiving jobs list: archiving moves a memory inside this set, never out of it."""


class ArchiveRule(Protocol):
    """What one archiving job archives: `decay` archives faded memories, `archive` expiring ones."""

    @property
    def report(self) -> JobReport:
        """The job's own report (the scan adds pages, scanned, archived, conflicts to it)."""

    @property
    def due_job(self) -> DueJob:
        """The store's due order this rule reads in a `due` scan."""

    @property
    def fingerprint(self) -> str:
        """What that due order was built with: a checkpoint holding another one means a `full` scan."""

    def due_before(self, now: datetime) -> datetime:
        """A `due` scan reads what is due at or before this."""

    def examine(self, memory: Memory, now: datetime) -> str | None:
        """Look at one live memory: the reason to archive it, or None to keep it.

        A rule may act on a memory it keeps (retention renews a recalled one) and counts
        what it did in its report.
        """


RECHECK_AFTER = timedelta(seconds=1)
"""A kept memory is due again no sooner than this after the run that kept it."""


class ArchivingScan:
    """A `ResumableJob` that archives, page by page, what its rule says (`decay` schedules by `decay`)."""

    def __init__(self, ctx: JobContext, rule: ArchiveRule, decay: DecayPolicy) -> None:
        self.ctx = ctx
        self.rule = rule
        self.decay = decay

    @property
    def report(self) -> JobReport:
        return self.rule.report

    def done(self, state: JobState) -> bool:
        return state.phase >= (1 if state.scan == "due" else len(SCAN_TYPES))

    def settle(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Choose the scan (a resumed run keeps its own); settle an interrupted archive batch.

        An interrupted batch: keep the stubs that landed, roll forward the rest or drop its copy.
        """
        if state.scan is None:  # a new run, or one that began before scans had a kind (full)
            state.scan = "due" if state.schedule == self.rule.fingerprint and state.phase == 0 else "full"
        self.report.scan = "due" if state.scan == "due" else "full"
        pending = state.pending
        if pending is None:
            return
        now = self.ctx.now()
        settled: list[str] = []
        for memory_id in pending.versions:
            current = self.ctx.service.store.get(self.ctx.tenant_id, memory_id)
            if current is not None and current.archive_ref == pending.ref:
                settled.append(memory_id)  # its stub landed before the interruption
                continue
            if self._roll_forward(pending, memory_id, current, now):
                settled.append(memory_id)
                self.report.archived += 1
            else:  # changed since: the copy is stale
                self.ctx.archive.delete(self.ctx.tenant_id, pending.ref, memory_id)
                self.report.conflicts += 1
        indexing.delete(self.ctx.service.index, self.ctx.tenant_id, settled)
        self.report.recovered += len(pending.versions)
        state.pending = None
        checkpoint.save(state)

    def step(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Examine one page; archive what the rule picked; schedule what it kept; move the cursor on."""
        store, now, size = self.ctx.service.store, self.ctx.now(), self.ctx.config.page_size
        if state.scan == "due":
            before = self.rule.due_before(now)
            page = store.list_due(self.ctx.tenant_id, self.rule.due_job, before, state.cursor, size)
        else:
            flt = MemoryFilter(types=(SCAN_TYPES[state.phase],), statuses=SCANNED_STATUSES)
            page = store.list_memories(self.ctx.tenant_id, flt, cursor=state.cursor, limit=size)
        batch: list[tuple[Memory, str]] = []
        kept: list[Memory] = []
        for memory in page.items:
            if memory.status is MemoryStatus.ARCHIVED:
                continue
            self.report.scanned += 1
            reason = self.rule.examine(memory, now)
            if reason is not None:
                batch.append((memory, reason))
            else:
                kept.append(memory)
        if batch:
            self._archive_batch(state, checkpoint, batch, now)
        if kept and (state.scan != "due" or self.rule.due_job == "decay"):
            self._schedule(kept, now)
        self.report.pages += 1
        state.cursor = page.cursor
        if state.cursor is None:
            state.phase += 1
            if self.done(state) and state.scan != "due":
                state.schedule = self.rule.fingerprint  # the due order is built: next runs read it

    def _schedule(self, kept: Sequence[Memory], now: datetime) -> None:
        """Each kept memory is next due for decay when it will have faded (never before `RECHECK_AFTER`)."""
        entries = []
        for memory in kept:
            fades = self.decay.fades_at(memory)
            due = None if fades is None else max(fades, now + RECHECK_AFTER)
            entries.append(DueAt(memory.id, memory.version, due, memory.expires_at))
        self.ctx.service.store.schedule(self.ctx.tenant_id, entries)
        self.report.scheduled += len(entries)

    def _archive_batch(
        self, state: JobState, checkpoint: Checkpoint, batch: Sequence[tuple[Memory, str]], now: datetime
    ) -> None:
        tenant_id, archive = self.ctx.tenant_id, self.ctx.archive
        entries = [(memory, self.ctx.service.store.history(tenant_id, memory.id)) for memory, _ in batch]
        ref = archive.put(tenant_id, entries)
        state.pending = Pending(
            ref=ref,
            versions={m.id: m.version for m, _ in batch},
            reasons={m.id: reason for m, reason in batch},
        )
        try:
            checkpoint.save(state)
        except Exception:  # not recorded as pending: take the batch back so a rerun cannot copy it twice
            state.pending = None
            for memory, _ in batch:
                archive.delete(tenant_id, ref, memory.id)
            raise
        archived: list[str] = []
        for memory, reason in batch:
            if commit_stub(self.ctx, memory, ref, reason, now, memory.version):
                archived.append(memory.id)
            else:
                archive.delete(tenant_id, ref, memory.id)
                self.report.conflicts += 1
        service = self.ctx.service
        indexing.delete(service.index, tenant_id, archived)
        gone = [m.model_copy(update={"status": MemoryStatus.ARCHIVED}) for m, _ in batch if m.id in archived]
        indexing.upsert(service.index, keyword_context.neighbour_documents(service.store, tenant_id, gone))
        self.report.archived += len(archived)
        state.pending = None

    def _roll_forward(self, pending: Pending, memory_id: str, current: Memory | None, now: datetime) -> bool:
        """Commit the stub of a pending memory that is still the version that was archived."""
        source = current or self._archived_copy(pending.ref, memory_id)  # None: expired or gone
        version = pending.versions[memory_id]
        if source is None or source.version != version or source.status not in ARCHIVABLE_STATUSES:
            return False
        reason = pending.reasons.get(memory_id, "archived")
        return commit_stub(self.ctx, source, pending.ref, reason, now, version)

    def _archived_copy(self, ref: str, memory_id: str) -> Memory | None:
        try:
            memory, _ = self.ctx.archive.get(self.ctx.tenant_id, ref, memory_id)
        except NotFoundError:
            return None
        return memory


def commit_stub(
    ctx: JobContext, memory: Memory, ref: str, reason: str, now: datetime, expected: int | None
) -> bool:
    """Put the memory's archived stub in its place; False if the store's version is not `expected`.

    `expected=None` inserts the stub (the record is gone, e.g. removed by TTL).
    """
    event = archived_event(memory, ref, reason, now)
    try:
        ctx.service.store.commit([StoreWrite(archived_stub(memory, ref), event, expected)])
    except ConflictError:
        return False
    return True
