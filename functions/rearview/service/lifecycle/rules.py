"""The two archiving rules: `decay` archives faded memories, `archive` (retention) expiring ones.

Each is an `ArchiveRule` for the `ArchivingScan` and keeps its own typed report.

- `DecayRule`: archives memories whose strength, decayed since their last recall, fell below
  the tenant's `DecayPolicy.archive_threshold` (never importance 5). Decay itself is computed,
  not stored (`service.policy`), so running it twice in a row changes nothing.
- `RetentionRule`: memories whose `expires_at` falls before the next run (`lookahead`) are
  archived *before* they expire (an expired memory reads as absent), or renewed when they
  were recalled within their retention (`RetentionPolicy.renewal`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rearview.errors import ConflictError
from rearview.models import HistoryAction, Memory
from rearview.ports import DueJob, StoreWrite
from rearview.service.history import change_event
from rearview.service.lifecycle.context import JobContext
from rearview.service.lifecycle.reports import DecayReport, RetentionReport
from rearview.service.policy import DecayPolicy, RetentionPolicy
from rearview.shared.clock import to_iso


class DecayRule:
    """Archive what faded below the threshold; record the strengths seen in a `DecayReport`."""

    due_job: DueJob = "decay"

    def __init__(self, policy: DecayPolicy, report: DecayReport) -> None:
        self.policy = policy
        self.report = report
        self.fingerprint = policy.fingerprint()

    def due_before(self, now: datetime) -> datetime:
        return now

    def examine(self, memory: Memory, now: datetime) -> str | None:
        report, decay = self.report, self.policy
        strength = decay.effective(memory, now)
        mean = report.mean_strength or 0.0
        report.mean_strength = mean + (strength - mean) / report.scanned  # running mean
        report.min_strength = strength if report.min_strength is None else min(report.min_strength, strength)
        if strength >= decay.archive_threshold:
            return None
        if memory.importance >= decay.protected_importance:
            report.protected += 1
            return None
        return f"faded: strength {strength:.3f} < {decay.archive_threshold}"


class RetentionRule:
    """Archive what expires before the next run, unless recalled: then renew it (`RetentionReport`)."""

    due_job: DueJob = "archive"
    fingerprint = "archive-v1"
    """The archive due order is each memory's own `expires_at`: no policy of this job shapes it."""

    def __init__(
        self, ctx: JobContext, policy: RetentionPolicy, lookahead: timedelta, report: RetentionReport
    ) -> None:
        self.ctx = ctx
        self.policy = policy
        self.lookahead = lookahead
        self.report = report

    def due_before(self, now: datetime) -> datetime:
        return now + self.lookahead

    def examine(self, memory: Memory, now: datetime) -> str | None:
        if memory.expires_at is None or memory.expires_at > now + self.lookahead:
            return None
        self.report.expiring += 1
        renewed = self.policy.renewal(memory, now, self.lookahead)
        if renewed is None:
            return f"retention: expires {to_iso(memory.expires_at)}"
        self._renew(memory, renewed, now)
        return None

    def _renew(self, memory: Memory, expires_at: datetime, now: datetime) -> None:
        """Extend the memory's retention (a new version); a concurrent change wins and is counted."""
        renewed = memory.model_copy(
            update={"expires_at": expires_at, "updated_at": now, "version": memory.version + 1}
        )
        note = f"retention renewed until {to_iso(expires_at)}: recalled {to_iso(memory.last_accessed_at)}"
        event = change_event(renewed, HistoryAction.UPDATED, memory, now, actor="lifecycle", note=note)
        try:
            self.ctx.service.store.commit([StoreWrite(renewed, event, memory.version)])
        except ConflictError:
            self.report.conflicts += 1
            return
        self.report.renewed += 1
