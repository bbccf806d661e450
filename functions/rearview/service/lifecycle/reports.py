"""What the lifecycle jobs tell their caller: one typed report per job and run.

Every paged job's report is a `JobReport` (the fields the runner and the archiving scan keep)
extended by its own counters; callers that need a job's own counters run that job and get
its own report type back (`LifecycleService.decay` returns a `DecayReport`, and so on).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, SerializeAsAny

from rearview.service.lifecycle.job_names import JobName


class JobReport(BaseModel):
    """What one run of one job did for one tenant.

    `complete` is False when the run stopped at its budget: the next run resumes from the
    checkpoint. `resumed` is True when this run continued an unfinished one. `conflicts`
    counts memories that changed while the job worked on them: left as they are, for the
    next run. `recovered` counts memories of an interrupted run's pending archive batch that
    this run settled. `scan` is how an archiving job (`decay`, `archive`) read the tenant: `due`,
    only what the store's due order holds (`MemoryStore.list_due`), or `full`, every memory (its
    first run, or the first after the decay policy changed: it builds the due order); `scheduled`
    counts the memories it moved in that order (kept, with their next due time).
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
    scan: Literal["due", "full"] | None = None
    scheduled: int = 0


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
    expired_archived: int = 0
    """Memories that had already expired (no run in time) found still stored, and archived."""
    expired_erased: int = 0
    """Soft-forgotten memories that had expired, erased (text included)."""


class ReconcileReport(JobReport):
    """`reconcile`: the index documents it fixed, and what the counts showed.

    `stale_fixed`: documents of an older version than the store's, rewritten; `orphans_removed`:
    documents the index held for memories the store no longer holds, or holds archived or
    deleted; `missing_indexed`: searchable memories the index lacked, indexed. `store_indexed`
    and `index_documents` are the counts compared once the index was checked (None when this
    run did not reach that phase).
    """

    job: JobName = "reconcile"
    stale_fixed: int = 0
    orphans_removed: int = 0
    missing_indexed: int = 0
    store_indexed: int | None = None
    index_documents: int | None = None


class CueReport(JobReport):
    """`cues`: recall cues the language model `model_id` wrote for active memories that had none.

    `asked`: memories sent to the model (what the per-run bound counts); `cued`: memories that got
    cues (`cues_written` in all); `had_cues`: memories listed that already had some, left alone;
    `unanswered`: memories the model gave no usable cue for (the next pass asks again);
    `unusable_answers`: answers that were not the JSON asked for, or were cut off (nothing of
    them written); `model_failures`: calls that failed (the run stops there for the tenant and the
    next one resumes at that page); `unindexed`: cued memories whose cues did not reach the index
    (reconcile rewrites them). `limit_reached`: the run stopped at `cues_per_run` (`complete` is
    then False, the next run resumes).
    """

    job: JobName = "cues"
    model_id: str | None = None
    asked: int = 0
    cued: int = 0
    cues_written: int = 0
    had_cues: int = 0
    unanswered: int = 0
    unusable_answers: int = 0
    model_failures: int = 0
    unindexed: int = 0
    limit_reached: bool = False


class ExpiryReport(BaseModel):
    """What `handle_expired` did with one TTL-expired memory."""

    tenant_id: str
    memory_id: str
    action: Literal["archived", "already_archived", "ignored"]
    archive_ref: str | None = None
    reason: str


class LifecycleRun(BaseModel):
    """The reports of one `run_job` call; `complete` is False when a run stopped at its budget."""

    job: JobName
    complete: bool
    reports: list[SerializeAsAny[JobReport]]
