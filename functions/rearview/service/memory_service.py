"""MemoryService: the domain logic of Rearview, written once for every backend.

Guarantees:
- the store is the source of truth and is written first; the index is derived. An index or
  embedder failure never loses a write (the result says `indexed: false`; `rearview reindex`
  repairs) and never fails a search (the result says `degraded: true`);
- every check runs before anything is written; multi-record changes (supersede, merge) are
  committed atomically;
- every store and index call is scoped by the caller's tenant, and every id and filter path by
  the caller's agent: another agent's `private` memory is never read or changed, and answers as
  absent (`visibility`); only `stats` counts it, in the tenant's totals;
- strength is anchored at `last_accessed_at` and decays with time unused (`policy`):
  ranking and every view show the decayed value, nothing is rewritten as time passes;
- archived memories keep a stub in the store (`archival`); their body is in the `Archive`, which
  `restore` reads back and a hard forget erases.

The write path lives in `write/` (decide, then apply), the search path in `search/`, update,
forget and restore in `changes`, the tunables in `config`; this facade holds one short method per
operation (the reads: get, history, stats, profile, browse) and re-exports `ServiceConfig` and
`scope_key` for callers that import them from here.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from rearview.errors import (
    IndexUnavailableError,
)
from rearview.limits import AgentIdText, checked
from rearview.models import (
    DEFAULT_AGENT,
    ForgetRequest,
    ForgetResult,
    HistoryResult,
    IngestRequest,
    IngestResult,
    Memory,
    MemoryFilter,
    MemoryType,
    MemoryView,
    SearchRequest,
    SearchResult,
    Stats,
    UpdateRequest,
    WriteRequest,
    WriteResult,
)
from rearview.ports import (
    Archive,
    Embedder,
    LanguageModel,
    MemoryIndex,
    MemoryStore,
)
from rearview.service.browsing import BrowsePage, DueList, DueMemory, browse_page, due_scan
from rearview.service.config import ServiceConfig
from rearview.service.ingest.cancellation import NEVER, Cancelled
from rearview.service.lifecycle.archival import (
    RestoreResult,
)
from rearview.service.lifecycle.context import LifecycleConfig
from rearview.service.lifecycle.strength import StrengthPoint, strength_points
from rearview.service.tenant_slots import TenantSlots
from rearview.service.visibility import load_visible, scoped
from rearview.service.write.consolidation import Consolidator
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.lazy import Lazy
from rearview.shared.scopes import scope_key

if TYPE_CHECKING:  # each capability's package loads with it, on first use (`MemoryService`)
    from rearview.service.changes import Changes
    from rearview.service.ingest.extraction import Extractor
    from rearview.service.ingest.ingester import Ingester
    from rearview.service.search.searcher import Searcher
    from rearview.service.write.summarizing import Summarizer
    from rearview.service.write.writer import Writer

__all__ = ["MemoryService", "ServiceConfig", "scope_key"]

log = logging.getLogger(__name__)

PROFILE_MAX_MEMORIES = 100
"""How many of an agent's most recently updated semantic memories its profile shows."""
DUE_LOOKAHEAD = LifecycleConfig().lookahead
"""How far ahead `due_for_archival` looks for expiring memories: the lifecycle jobs' default."""


class MemoryService:
    """Write, search, get, update, forget, restore, summarize memories; their history, stats, profile.

    `archive` is where archived bodies live (restore and hard forget need it; without one,
    restoring is an `ArchiveError`). `consolidator` makes summaries abstractive and judges
    contradictions when it has a language model; by default it is extractive only. `extractor` reads
    ingested messages for facts (by default the offline rules of `extraction`). The
    collaborators are fixed at construction (the write and search paths hold them too).

    Each capability (write, search, ingest, summarize, update/forget/restore) is built, and its
    package imported, on its first call: a process that never searches never loads the search
    path, and a cold Lambda answers `initialize` and `tools/list` without any of them.
    """

    def __init__(
        self,
        store: MemoryStore,
        index: MemoryIndex,
        embedder: Embedder,
        clock: Clock | None = None,
        config: ServiceConfig | None = None,
        archive: Archive | None = None,
        consolidator: Consolidator | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock or SystemClock()
        self.config = config or ServiceConfig()
        self.archive = archive
        self.consolidator = consolidator or Consolidator()
        self._extractor = extractor
        self._writer = Lazy(self._new_writer)
        self._searcher = Lazy(self._new_searcher)
        self._ingester = Lazy(self._new_ingester)
        self._ingest_slots = TenantSlots("memory_ingest", self.config.tenant_ingest_concurrency)
        self._summarizer = Lazy(self._new_summarizer)
        self._changes = Lazy(self._new_changes)

    def load_capabilities(self) -> None:
        """Build every capability now (where init is pre-paid: SnapStart, provisioned concurrency)."""
        for capability in (self._writer, self._searcher, self._ingester, self._summarizer, self._changes):
            capability.get()

    def _new_writer(self) -> Writer:
        from rearview.service.write.writer import Writer

        return Writer(self.store, self.index, self.embedder, self.clock, self.config, self.consolidator)

    def _new_searcher(self) -> Searcher:
        from rearview.service.search.searcher import Searcher

        return Searcher(self.store, self.index, self.embedder, self.clock, self.config)

    def _new_ingester(self) -> Ingester:
        from rearview.service.ingest.extraction import RulesExtractor
        from rearview.service.ingest.ingester import Ingester
        from rearview.service.write.batch import WriteBatch

        writer = self._writer.get()
        extractor = self._extractor or RulesExtractor()
        return Ingester(writer, extractor, lambda tenant_id: WriteBatch(writer, tenant_id))

    def _new_summarizer(self) -> Summarizer:
        from rearview.service.write.summarizing import Summarizer

        return Summarizer(self.store, self.embedder, self.consolidator, self.clock, self.write, self._present)

    def _new_changes(self) -> Changes:
        from rearview.service.changes import Changes

        store, index, embedder, writer = self.store, self.index, self.embedder, self._writer.get()
        return Changes(store, index, embedder, self.clock, self.config, self.archive, writer, self._present)

    @property
    def language_model(self) -> LanguageModel | None:
        """The deployment's language model (`REARVIEW_LLM`, the consolidator's), or None offline."""
        return self.consolidator.llm

    def write(self, tenant_id: str, req: WriteRequest) -> WriteResult:
        """Store one memory, or merge it into a duplicate, or supersede an older one: see `Writer.write`."""
        return self._writer.get().write(tenant_id, req)

    def ingest(self, tenant_id: str, req: IngestRequest, cancelled: Cancelled = NEVER) -> IngestResult:
        """Turn a conversation's messages into memories, idempotently and in bounds: see `Ingester`.

        At most `config.tenant_ingest_concurrency` run per tenant at once; one more is `BusyError`.
        `cancelled` (polled between messages) stops it early with what it stored.
        """
        ingester = self._ingester.get()
        with self._ingest_slots.slot(tenant_id):
            return ingester.ingest(tenant_id, req, cancelled)

    def search(self, tenant_id: str, req: SearchRequest) -> SearchResult:
        """Hybrid recall that never fails for an index or embedder outage: see `Searcher.search`."""
        return self._searcher.get().search(tenant_id, req)

    # ------------------------------------------------------------------ get/update/forget/restore

    def get(self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT) -> MemoryView:
        """The memory (any status; an archived one as its stub), or NotFoundError.

        Another agent's private memory is NotFoundError too, exactly like an unknown id.
        """
        return self._present(load_visible(self.store, tenant_id, memory_id, agent_id))

    def _present(self, memory: Memory) -> MemoryView:
        """The memory as the API shows it: strength decayed to now."""
        strength = self.config.policy(memory.tenant_id).decay.effective(memory, self.clock.now())
        return memory.model_copy(update={"strength": strength}).view()

    def update(self, tenant_id: str, req: UpdateRequest) -> MemoryView:
        """A new version of an active memory (versioned, authorship checked): see `Changes.update`."""
        return self._changes.get().update(tenant_id, req)

    def forget(self, tenant_id: str, req: ForgetRequest) -> ForgetResult:
        """Soft or hard deletion by ids or a filter, reaching every copy when hard: see `Changes.forget`."""
        return self._changes.get().forget(tenant_id, req)

    def restore(
        self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT, *, agent_bound: bool = False
    ) -> RestoreResult:
        """Bring an archived or soft-forgotten memory back: see `Changes.restore`."""
        return self._changes.get().restore(tenant_id, memory_id, agent_id, agent_bound=agent_bound)

    # ------------------------------------------------------------------------- history/stats

    def history(self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT) -> HistoryResult:
        """The memory's events, oldest first: why the agent believes what it believes.

        NotFoundError unless the memory exists (unexpired) and `agent_id` may see it.
        """
        memory = load_visible(self.store, tenant_id, memory_id, agent_id)
        events = self.store.history(tenant_id, memory.id)
        return HistoryResult(memory_id=memory.id, memory=self._present(memory), events=events)

    def browse(
        self,
        tenant_id: str,
        flt: MemoryFilter,
        agent_id: str = DEFAULT_AGENT,
        cursor: str | None = None,
        limit: int = 25,
    ) -> BrowsePage:
        """One page (`limit` <= `browsing.MAX_BROWSE_PAGE`) of what `agent_id` may see, newest first.

        `flt`'s statuses, type, tag and session restrict it; its agent is replaced by `agent_id`.
        Strength is decayed to now. Pass the returned `cursor` back for the next page.
        """
        checked(AgentIdText, agent_id, "agent_id")
        items, next_cursor = browse_page(self.store, tenant_id, agent_id, flt, cursor, limit)
        return BrowsePage(items=[self._present(m) for m in items], cursor=next_cursor, agent_id=agent_id)

    def due_for_archival(
        self,
        tenant_id: str,
        agent_id: str = DEFAULT_AGENT,
        limit: int = 25,
        lookahead: timedelta = DUE_LOOKAHEAD,
    ) -> DueList:
        """What the next lifecycle run would archive of what `agent_id` may see (bounded scan, no write)."""
        checked(AgentIdText, agent_id, "agent_id")
        policy = self.config.policy(tenant_id)
        due, scanned, complete = due_scan(
            self.store, tenant_id, agent_id, policy, self.clock.now(), lookahead, limit
        )
        items = [DueMemory(memory=self._present(m), reason=r) for m, r in due]
        return DueList(items=items, scanned=scanned, complete=complete)

    def strength_history(
        self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT
    ) -> list[StrengthPoint]:
        """The anchors of the memory's strength over time (`strength`), for a chart; NotFoundError as get."""
        memory = load_visible(self.store, tenant_id, memory_id, agent_id)
        return strength_points(memory, self.store.history(tenant_id, memory.id))

    def stats(self, tenant_id: str) -> Stats:
        """Counts by type and status, the embedding model, and the index's document count if reachable.

        The counts are the tenant's, every agent's private memories included: they are aggregates
        (no id, content or agent), and an agent's view of them would need per-agent counts in every store.
        """
        base = self.store.stats(tenant_id)
        try:
            indexed: int | None = self.index.count(tenant_id)
        except IndexUnavailableError:
            indexed = None
        status = getattr(self.embedder, "status", None)  # a fallback says why (embedders/priority.py)
        return Stats(
            **base.model_dump(), embedding_model=self.embedder.model_id,
            embedder_status=status if isinstance(status, str) else None, index_documents=indexed,
        )  # fmt: skip

    def summarize(
        self,
        tenant_id: str,
        session_id: str | None = None,
        time_from: datetime | None = None,
        time_to: datetime | None = None,
        summary_type: MemoryType = MemoryType.EPISODIC,
        agent_id: str = DEFAULT_AGENT,
        agent_bound: bool = False,
        summary: str | None = None,
    ) -> WriteResult:
        """Consolidate a session's (or time range's) episodic memories into one memory found first.

        `summary`: the agent's own consolidation, stored as its memory; without it the deployment's
        language model writes one, else the offline extract, whose result lists its `sources`. See
        `write.summarizing`.
        """
        return self._summarizer.get().summarize(
            tenant_id, session_id, time_from, time_to, summary_type, agent_id, agent_bound, summary
        )

    def profile(self, tenant_id: str, agent_id: str = DEFAULT_AGENT) -> list[MemoryView]:
        """What `agent_id` knows about its user: its visible active semantic memories, newest first.

        The user's current state: the `PROFILE_MAX_MEMORIES` most recently updated active ones, newest
        first (a superseded memory is not active, so a corrected fact shows once), with strength
        decayed to now.
        """
        flt = MemoryFilter(types=(MemoryType.SEMANTIC,))
        page = self.store.list_memories(
            tenant_id, scoped(flt, checked(AgentIdText, agent_id, "agent_id")), limit=PROFILE_MAX_MEMORIES
        )
        newest = sorted(page.items, key=lambda m: (m.updated_at, m.id), reverse=True)
        return [self._present(m) for m in newest]
