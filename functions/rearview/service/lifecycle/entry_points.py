"""What the Lambda handlers call (`handlers/jobs.py`, `handlers/stream.py`).

Plain functions over a `MemoryService`, so a handler stays a parse-call-render adapter.
"""

from __future__ import annotations

from rearview.models import Memory
from rearview.ports import CheckpointStore
from rearview.service.lifecycle.budget import Budget
from rearview.service.lifecycle.context import LifecycleConfig, ServiceParts
from rearview.service.lifecycle.job_names import JobName
from rearview.service.lifecycle.reports import ExpiryReport, LifecycleRun
from rearview.service.lifecycle.service import LifecycleService


def run_job(
    service: ServiceParts,
    job: JobName,
    tenant_id: str | None = None,
    *,
    budget: Budget | None = None,
    checkpoints: CheckpointStore,
    config: LifecycleConfig | None = None,
) -> LifecycleRun:
    """Run `job` for one tenant, or for every tenant when `tenant_id` is None, within `budget`.

    Pass `budget=Deadline.from_remaining_ms(context.get_remaining_time_in_millis())` from a
    Lambda handler so the run hands over before the timeout. `checkpoints` is where paged jobs
    keep their progress between runs.
    """
    lifecycle = LifecycleService(service, checkpoints, config)
    tenants = [tenant_id] if tenant_id is not None else None
    reports = lifecycle.run_all([job], tenants=tenants, budget=budget)
    return LifecycleRun(job=job, complete=all(r.complete for r in reports), reports=reports)


def on_expired(service: ServiceParts, memory: Memory, checkpoints: CheckpointStore) -> ExpiryReport:
    """`LifecycleService.handle_expired` for one TTL-expired memory (the stream consumer's call)."""
    return LifecycleService(service, checkpoints).handle_expired(memory.tenant_id, memory)
