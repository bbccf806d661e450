"""`LifecycleService`: the lifecycle jobs over one `MemoryService`, per tenant and all tenants."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rearview.errors import InvalidInputError
from rearview.models import Memory
from rearview.ports import Archive, CheckpointStore
from rearview.service.lifecycle.archiving import ArchivingScan
from rearview.service.lifecycle.budget import Budget, Unlimited
from rearview.service.lifecycle.context import JobContext, LifecycleConfig, ServiceParts
from rearview.service.lifecycle.cues import CueJob
from rearview.service.lifecycle.expiry import archive_expired, sweep_expired
from rearview.service.lifecycle.job_names import DEFAULT_JOBS, JOBS, JobName
from rearview.service.lifecycle.reconcile import ReconcileJob
from rearview.service.lifecycle.reports import (
    CueReport,
    DecayReport,
    ExpiryReport,
    JobReport,
    ReconcileReport,
    RetentionReport,
)
from rearview.service.lifecycle.rules import DecayRule, RetentionRule
from rearview.service.lifecycle.runner import Checkpoint, ResumableJob, run_resumable


class LifecycleService:
    """The lifecycle jobs over one `MemoryService` (its store, index, embedder, archive and policies)."""

    def __init__(
        self, service: ServiceParts, checkpoints: CheckpointStore, config: LifecycleConfig | None = None
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
        if job == "decay":
            return self.decay(tenant_id, budget)
        if job == "archive":
            return self.apply_retention(tenant_id, budget)
        if job == "reconcile":
            return self.reconcile(tenant_id, budget)
        if job == "cues":
            return self.cues(tenant_id, budget)
        raise InvalidInputError("job", f"unknown job {job!r}", allowed=JOBS)

    def run_all(
        self,
        jobs: Sequence[JobName] = DEFAULT_JOBS,
        tenants: Sequence[str] | None = None,
        budget: Budget | None = None,
    ) -> list[JobReport]:
        """Run `jobs` for every tenant (default: all), unfinished and least recently finished first.

        Stops when the budget runs out; what is left resumes on the next call, so no tenant
        starves behind a large one. A job that is not `enabled` is left out (no tenant is read for it).
        """
        budget = budget or Unlimited()
        jobs = [job for job in jobs if self.enabled(job)]
        if not jobs:
            return []
        names = list(tenants) if tenants is not None else self.service.store.tenants()
        reports: list[JobReport] = []
        for tenant_id in sorted(names, key=lambda t: self._urgency(t, jobs)):
            for job in jobs:
                if budget.expired():
                    return reports
                reports.append(self.run(job, tenant_id, budget))
        return reports

    def enabled(self, job: JobName) -> bool:
        """Whether `job` has anything to do here: `cues` needs a language model and `cues_per_run` > 0."""
        if job == "cues":
            return self.service.language_model is not None and self.config.cues_per_run > 0
        return True

    def _urgency(self, tenant_id: str, jobs: Sequence[JobName]) -> tuple[int, float]:
        states = [self._checkpoint(tenant_id, job).load() for job in jobs]
        unfinished = any(s.started_at is not None for s in states)
        finished = [s.completed_at.timestamp() for s in states if s.completed_at is not None]
        return (0 if unfinished else 1, min(finished) if len(finished) == len(states) else 0.0)

    # ------------------------------------------------------------------------------- jobs

    def decay(self, tenant_id: str, budget: Budget | None = None) -> DecayReport:
        """Archive the tenant's memories whose decayed strength is below the threshold."""
        report = DecayReport(tenant_id=tenant_id, started_at=self.service.clock.now())
        decay = self.service.config.policy(tenant_id).decay
        self._run(ArchivingScan(self._context(tenant_id), DecayRule(decay, report), decay), budget)
        return report

    def apply_retention(self, tenant_id: str, budget: Budget | None = None) -> RetentionReport:
        """Archive (or renew, if recalled) the tenant's memories that expire before the next run."""
        ctx = self._context(tenant_id)
        report = RetentionReport(tenant_id=tenant_id, started_at=ctx.now())
        policy = self.service.config.policy(tenant_id)
        rule = RetentionRule(ctx, policy.retention, self.config.lookahead, report)
        archived, erased = sweep_expired(ctx)  # what expired while no run came in time
        report.expired_archived, report.expired_erased = archived, erased
        self._run(ArchivingScan(ctx, rule, policy.decay), budget)
        return report

    def reconcile(self, tenant_id: str, budget: Budget | None = None) -> ReconcileReport:
        """Make the index agree with the store for one tenant (see `reconcile.ReconcilePhase`)."""
        report = ReconcileReport(tenant_id=tenant_id, started_at=self.service.clock.now())
        self._run(ReconcileJob(self._context(tenant_id), report), budget)
        return report

    def cues(self, tenant_id: str, budget: Budget | None = None) -> CueReport:
        """Write recall cues for the tenant's active memories that have none (see `cues`).

        At most `config.cues_per_run` memories go to the model per run; the run then stops
        (`complete` False, `limit_reached`) and the next one resumes. Without a language model (or
        with `cues_per_run` 0) nothing is read or written: a complete report without `model_id`.
        """
        now = self.service.clock.now()
        model = self.service.language_model
        if model is None or self.config.cues_per_run <= 0:
            return CueReport(tenant_id=tenant_id, started_at=now, finished_at=now, complete=True)
        report = CueReport(tenant_id=tenant_id, started_at=now, model_id=model.model_id)
        job = CueJob(self._context(tenant_id), model, report)
        self._run(job, _Either(budget or Unlimited(), lambda: job.exhausted))
        report.limit_reached = not report.complete and job.exhausted and report.model_failures == 0
        return report

    def handle_expired(self, tenant_id: str, old_image: Memory) -> ExpiryReport:
        """Archive a memory the store's TTL removed (a DynamoDB stream REMOVE old image); idempotent.

        See `expiry.archive_expired`: a stub takes its place, its index document is dropped.
        """
        return archive_expired(self._context(tenant_id), old_image)

    # ---------------------------------------------------------------------------- helpers

    def _run(self, job: ResumableJob, budget: Budget | None) -> None:
        report = job.report
        checkpoint = self._checkpoint(report.tenant_id, report.job)
        run_resumable(job, checkpoint, budget or Unlimited(), self.service.clock)

    def _context(self, tenant_id: str) -> JobContext:
        return JobContext(tenant_id, self.service, self.archive, self.config)

    def _checkpoint(self, tenant_id: str, job: JobName) -> Checkpoint:
        return Checkpoint(self.checkpoints, tenant_id, job)


class _Either:
    """A budget that runs out with `budget` or as soon as `spent()` says so (a job's own bound)."""

    def __init__(self, budget: Budget, spent: Callable[[], bool]) -> None:
        self.budget = budget
        self.spent = spent

    def expired(self) -> bool:
        return self.spent() or self.budget.expired()
