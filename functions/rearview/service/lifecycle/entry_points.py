"""What the Lambda handlers call (`handlers/jobs.py`, `handlers/stream.py`).

Plain functions over a `MemoryService`, so a handler stays a parse-call-render adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rearview.models import Memory
from rearview.ports import CheckpointStore
from rearview.service.job_names import JobName
from rearview.service.lifecycle.budget import Budget
from rearview.service.lifecycle.context import LifecycleConfig
from rearview.service.lifecycle.reports import ExpiryReport, LifecycleRun
from rearview.service.lifecycle.service import LifecycleService

if TYPE_CHECKING:
    from rearview.service.memory_service import MemoryService

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
