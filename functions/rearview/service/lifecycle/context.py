"""What a lifecycle job works with: its tunables, and the service's ports for one tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from rearview.ports import Archive, Embedder, LanguageModel, MemoryIndex, MemoryStore
from rearview.service.config import ServiceConfig
from rearview.shared.clock import Clock


class ServiceParts(Protocol):
    """What the jobs use of the service: its ports, clock and policies (`MemoryService` is one).

    A protocol, not the facade's class, so that `lifecycle` depends on the ports and the
    facade may depend on `lifecycle` (archival, strength), never the other way round.
    """

    @property
    def store(self) -> MemoryStore: ...
    @property
    def index(self) -> MemoryIndex: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def config(self) -> ServiceConfig: ...
    @property
    def archive(self) -> Archive | None: ...
    @property
    def language_model(self) -> LanguageModel | None:
        """The deployment's model (`REARVIEW_LLM`), or None offline: the `cues` job needs one."""


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Tunables of the jobs."""

    page_size: int = 100
    """Memories read per store page (and at most archived per archive object)."""
    lookahead: timedelta = timedelta(hours=1.5)
    """Archive what expires within this much time: the interval between runs (hourly) plus slack, and no
    more: a memory is archived up to this long before its time (`Settings.lifecycle_lookahead`)."""
    reindex_batch: int = 64
    versions_page: int = 1000
    """(memory id, version) pairs read per index page when reconcile lists what the index holds."""
    cues_per_run: int = 50
    """Memories the `cues` job sends to the language model per tenant and run, at most; 0 turns it off
    (`Settings.lifecycle_cues_per_run`)."""


@dataclass(frozen=True, slots=True)
class JobContext:
    """One tenant's job: the service whose store, index, embedder, clock and policies it uses.

    `archive` is the service's archive, required (the service checks it once, not each job).
    """

    tenant_id: str
    service: ServiceParts
    archive: Archive
    config: LifecycleConfig

    def now(self) -> datetime:
        return self.service.clock.now()
