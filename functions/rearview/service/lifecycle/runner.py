"""The one resumable runner of the paged jobs: load the checkpoint, resume, page within the budget, save.

A job plugs in as a `ResumableJob`: it says whether it is `done`, does one `step` (a page,
or a phase with no page, such as counting) and `settle`s what an interrupted run left behind.
The runner owns the rest, for every job alike:

- a run that finds an unfinished checkpoint continues it (`report.resumed`), else starts
  over from phase 0, keeping when the job last completed;
- the budget is checked before each step; the position is saved after each one, and when
  the budget runs out (`report.complete` stays False, the next run resumes there);
- a finished run leaves a checkpoint that only records when it completed (and `schedule`).

The checkpoint is `JobState` as JSON in the `CheckpointStore`, under (tenant, job name).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from pydantic import BaseModel

from rearview.ports import CheckpointStore
from rearview.service.lifecycle.budget import Budget
from rearview.service.lifecycle.job_names import JobName
from rearview.service.lifecycle.reports import JobReport
from rearview.shared.clock import Clock


class Pending(BaseModel):
    """An archive batch written but not yet known to be committed: memory id -> (version, reason)."""

    ref: str
    versions: dict[str, int]
    reasons: dict[str, str]


class JobState(BaseModel):
    """The checkpoint of one job for one tenant.

    `phase` and `cursor` are the job's position: the phase is the job's own number (its
    meaning is the job's), the cursor the store's page cursor within it.
    """

    phase: int = 0
    cursor: str | None = None
    pending: Pending | None = None
    started_at: datetime | None = None
    """Set while a run is unfinished."""
    completed_at: datetime | None = None
    scan: str | None = None
    """How this run reads, chosen when it starts (the archiving jobs: `due` or `full`)."""
    schedule: str | None = None
    """What the store's due order was last built with (the archiving jobs' policy fingerprint); kept
    from run to run."""


class Checkpoint:
    """The saved position of one job for one tenant."""

    def __init__(self, store: CheckpointStore, tenant_id: str, job: JobName) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.job = job

    def load(self) -> JobState:
        """The last saved state, or a fresh one if none was saved."""
        raw = self.store.load(self.tenant_id, self.job)
        return JobState.model_validate_json(raw) if raw else JobState()

    def save(self, state: JobState) -> None:
        self.store.save(self.tenant_id, self.job, state.model_dump_json())


class ResumableJob(Protocol):
    """A paged job the runner can drive, stop at any step boundary and resume."""

    @property
    def report(self) -> JobReport:
        """The report this run fills in (the runner sets `resumed`, `complete`, `finished_at`)."""

    def settle(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Before the first step: finish what an interrupted run left (and save if it changed `state`)."""

    def done(self, state: JobState) -> bool:
        """Whether `state` is past the job's last phase."""

    def step(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Do one step and advance `state` past it; the runner saves `state` afterwards.

        A step that writes something a crash must not lose saves `checkpoint` itself first.
        """


def run_resumable(job: ResumableJob, checkpoint: Checkpoint, budget: Budget, clock: Clock) -> None:
    """Run or resume `job` until it is done or `budget` runs out; the outcome is in `job.report`."""
    report = job.report
    state = checkpoint.load()
    report.resumed = state.started_at is not None
    if not report.resumed:
        state = JobState(
            started_at=report.started_at, completed_at=state.completed_at, schedule=state.schedule
        )
    job.settle(state, checkpoint)
    while not job.done(state):
        if budget.expired():
            checkpoint.save(state)
            report.finished_at = clock.now()
            return
        job.step(state, checkpoint)
        checkpoint.save(state)
    report.finished_at = clock.now()
    report.complete = True
    checkpoint.save(JobState(completed_at=report.finished_at, schedule=state.schedule))
