"""The MemoryService a Lambda process uses: built once from `REARVIEW_*` settings, never per invoke.

`lambda_service()` is that one instance (cached; the jobs and stream handlers call it), and
`build_lambda_service()` builds one from given settings (the MCP runtime, which reads the
settings itself and caches the whole runtime). Tests reset the cache with `lambda_service.cache_clear()`.

AWS resources (table, bucket, collection) come from template.yaml, so the store's schema is never
created here; the search index is the exception the MCP handler may create (`ensure_index`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rearview.config.settings import Settings
    from rearview.ports import CheckpointStore
    from rearview.service.lifecycle import LifecycleConfig
    from rearview.service.memory_service import MemoryService

__all__ = [
    "build_lambda_service",
    "lambda_checkpoints",
    "lambda_lifecycle_config",
    "lambda_service",
    "process_checkpoints",
]


def build_lambda_service(settings: Settings | None = None) -> MemoryService:
    """A MemoryService for the configured backends; constructors do no I/O (clients are lazy)."""
    from rearview.bootstrap import build_service
    from rearview.config.settings import Settings

    return build_service(settings or Settings.load(), ensure_schema=False)


@cache
def lambda_service() -> MemoryService:
    """The process's MemoryService, built from the environment on first use and reused after."""
    return build_lambda_service()


@cache
def lambda_checkpoints() -> CheckpointStore:
    """Where the scheduled jobs keep their progress across invocations (the table, on AWS)."""
    from rearview.bootstrap import build_checkpoints
    from rearview.config.settings import Settings

    return build_checkpoints(Settings.load())


@cache
def lambda_lifecycle_config() -> LifecycleConfig:
    """The scheduled jobs' tunables from the environment (`REARVIEW_LIFECYCLE_*`)."""
    from rearview.bootstrap import build_lifecycle_config
    from rearview.config.settings import Settings

    return build_lifecycle_config(Settings.load())


@cache
def process_checkpoints() -> CheckpointStore:
    """Progress kept in this process only (survives warm invocations): for callers given no store."""
    from rearview.backends.memory_checkpoints import InMemoryCheckpointStore

    return InMemoryCheckpointStore()
