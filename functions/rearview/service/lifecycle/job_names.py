"""The names of the lifecycle jobs: one type for the schedule's event, the CLI and the jobs.

A name is also a key of the deployment (the schedules in `template.yaml`, the `rearview`
subcommands) and of the checkpoint store, so renaming one is a migration. This module imports
nothing else on purpose: the jobs handler validates its event against `JobName` before it
loads the service.
"""

from __future__ import annotations

from typing import Literal, get_args

JobName = Literal["decay", "archive", "reconcile", "cues"]
JOBS: tuple[JobName, ...] = get_args(JobName)
DEFAULT_JOBS: tuple[JobName, ...] = ("decay", "archive", "cues")
"""What `LifecycleService.run_all` and the `rearview serve` timer run unless told otherwise (`cues` only
with a language model: `LifecycleService.enabled`)."""
