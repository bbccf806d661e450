"""What a lifecycle job works with: its tunables, and the service's ports for one tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from rearview.ports import Archive

if TYPE_CHECKING:
    from rearview.service.memory_service import MemoryService


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Tunables of the jobs."""

    page_size: int = 100
    """Memories read per store page (and at most archived per archive object)."""
    lookahead: timedelta = timedelta(hours=36)
    """Archive what expires within this much time: at least the interval between runs."""
    reindex_batch: int = 64
    versions_page: int = 1000
    """(memory id, version) pairs read per index page when reconcile lists what the index holds."""


@dataclass(frozen=True, slots=True)
class JobContext:
    """One tenant's job: the service whose store, index, embedder, clock and policies it uses.

    `archive` is the service's archive, required (the service checks it once, not each job).
    """

    tenant_id: str
    service: MemoryService
    archive: Archive
    config: LifecycleConfig

    def now(self) -> datetime:
        return self.service.clock.now()
