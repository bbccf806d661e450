"""Scheduled lifecycle jobs: the EventBridge Scheduler target (`handlers.jobs.handler`).

Event (the schedule's `Input`, delivered as is): `{"job": "decay" | "archive" | "reconcile" | "cues",
"tenant": "<id>"}`; `tenant` is optional (every tenant when absent). `cues` does nothing (no tenant
read, `status` complete, no reports) unless the function has a language model (`REARVIEW_LLM`).

Contract:
- The job logic is `rearview.service.lifecycle.run_job`; this handler validates the event
  (Powertools `event_parser` with the `JobEvent` model), gives the run a budget that ends before
  the invocation's timeout and the jobs' tunables from `REARVIEW_LIFECYCLE_*`, and renders the report:
  `{"job", "tenant", "status": "complete" | "incomplete", "result": <LifecycleRun as JSON>}`.
  `incomplete` means the run stopped at its budget (`cues`: or at its bound per tenant and run); the
  next scheduled run resumes it.
- A malformed event raises pydantic's `ValidationError` (a `ValueError`) before the service is
  built: the invocation fails, Lambda retries it
  (asynchronous invocation) and then sends it to the jobs dead-letter queue, where it is seen.
- An error raised by the job propagates the same way (retried, then dead-lettered, alarmed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.parser import event_parser
from pydantic import BaseModel, ConfigDict, Field

from handlers._service import (
    lambda_checkpoints,
    lambda_lifecycle_config,
    lambda_service,
    process_checkpoints,
)
from rearview.service.lifecycle.job_names import JobName

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from rearview.ports import CheckpointStore
    from rearview.service.lifecycle import LifecycleConfig
    from rearview.service.memory_service import MemoryService

__all__ = ["JobEvent", "handler", "run"]

logger = Logger()  # service name: POWERTOOLS_SERVICE_NAME (template.yaml sets it)


class JobEvent(BaseModel):
    """The payload a schedule sends (its `Input`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job: JobName
    tenant: str | None = Field(default=None, min_length=1, max_length=256)


def run(
    job: JobEvent,
    service: Callable[[], MemoryService],
    remaining_ms: int | None = None,
    checkpoints: Callable[[], CheckpointStore] | None = None,
    config: Callable[[], LifecycleConfig] | None = None,
) -> dict[str, Any]:
    """Run the event's job and render its report.

    Without `checkpoints` progress is kept in memory (it survives warm invocations only); without
    `config` the jobs run with `LifecycleConfig`'s defaults.
    """
    from rearview.service.lifecycle import Deadline, run_job

    budget = Deadline.from_remaining_ms(remaining_ms) if remaining_ms is not None else None
    store = checkpoints() if checkpoints is not None else process_checkpoints()
    tunables = config() if config is not None else None
    outcome = run_job(service(), job.job, job.tenant, budget=budget, checkpoints=store, config=tunables)
    return {
        "job": job.job,
        "tenant": job.tenant,
        "status": "complete" if outcome.complete else "incomplete",
        "result": outcome.model_dump(mode="json"),
    }


@logger.inject_lambda_context(clear_state=True)
@event_parser(model=JobEvent)
def handler(event: JobEvent, context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (`handlers.jobs.handler`); `event` arrives parsed (a malformed one fails first)."""
    logger.append_keys(job=event.job, tenant=event.tenant)
    remaining_ms = context.get_remaining_time_in_millis()
    result = run(event, lambda_service, remaining_ms, lambda_checkpoints, lambda_lifecycle_config)
    logger.info("job finished", extra={"status": result["status"]})
    return result
