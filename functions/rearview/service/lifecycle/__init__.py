"""Lifecycle jobs: fade what is no longer used, archive what reached its retention, keep the index honest.

Jobs (each per tenant, each returning its own typed report of what it did):

- `decay` and `archive` (retention): an `ArchivingScan` with a `DecayRule` or a `RetentionRule`
  (`rules`): archive faded memories; archive expiring ones before they expire, or renew them.
- `reconcile`: compares the index's document versions with the store's: rewrites stale
  documents, removes those of archived, deleted or purged memories, and indexes the searchable
  memories the index lacks.
- `cues` (`cues`): with the deployment's language model, writes recall cues for the active
  memories that have none, a bounded number per tenant and run (nothing without a model).
- `handle_expired` (`expiry`): the DynamoDB stream consumer's entry point for a TTL deletion:
  archives the old image (with its history) and drops it from the index.

How they behave:

- **paginated**: one page (`page_size`) at a time, of the store (or of the index's versions, for
  reconcile), over a listing whose membership and order the jobs' own writes never change, so a
  cursor stays valid while a job works;
- **resumable**: one runner (`runner.run_resumable`) drives every paged job: after every page
  the position is saved in the `CheckpointStore` (per tenant and job); a run that meets its
  `Budget` stops there and the next run continues;
- **idempotent, nothing archived twice or lost**: see `archiving` for how an interrupted
  archive batch is settled on resume.

Modules: `budget` (how long a run may go), `reports`, `context` (tunables and the ports a job
uses), `runner`, `archiving`, `rules`, `reconcile`, `cues`, `expiry`, `service` (`LifecycleService`),
`entry_points` (what the Lambda handlers call), `timer` (`rearview serve`'s rounds),
`job_names` (the jobs' names, shared with the schedules and the CLI), `archival` (what an
archived memory's stub holds and how it comes back), `strength` (strength anchors over time).

May import: the cross-cutting service modules (`config`, `policy`, `history`, `indexing`,
`keyword_context`), `rearview.models`, `rearview.ports`. Jobs work on `context.ServiceParts`
(the service's ports and policies), so the facade can use `archival` and `strength` without a
circle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rearview.service.lifecycle.budget import Budget, Deadline, Unlimited
    from rearview.service.lifecycle.context import LifecycleConfig
    from rearview.service.lifecycle.entry_points import on_expired, run_job
    from rearview.service.lifecycle.job_names import DEFAULT_JOBS, JOBS, JobName
    from rearview.service.lifecycle.reports import (
        CueReport,
        DecayReport,
        ExpiryReport,
        JobReport,
        LifecycleRun,
        ReconcileReport,
        RetentionReport,
    )
    from rearview.service.lifecycle.service import LifecycleService
    from rearview.service.lifecycle.timer import LifecycleTimer

_HOME = {
    "Budget": "budget",
    "Deadline": "budget",
    "Unlimited": "budget",
    "LifecycleConfig": "context",
    "on_expired": "entry_points",
    "run_job": "entry_points",
    "DEFAULT_JOBS": "job_names",
    "JOBS": "job_names",
    "JobName": "job_names",
    "CueReport": "reports",
    "DecayReport": "reports",
    "ExpiryReport": "reports",
    "JobReport": "reports",
    "LifecycleRun": "reports",
    "ReconcileReport": "reports",
    "RetentionReport": "reports",
    "LifecycleService": "service",
    "LifecycleTimer": "timer",
}
"""Each exported name's module. Imported on first use (PEP 562): the MCP function imports
`archival` and `strength` for every request, and the jobs (their regexes, the cue writer) only
where a job runs, which keeps them out of its cold start."""


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "DEFAULT_JOBS",
    "JOBS",
    "Budget",
    "CueReport",
    "Deadline",
    "DecayReport",
    "ExpiryReport",
    "JobName",
    "JobReport",
    "LifecycleConfig",
    "LifecycleRun",
    "LifecycleService",
    "LifecycleTimer",
    "ReconcileReport",
    "RetentionReport",
    "Unlimited",
    "on_expired",
    "run_job",
]
