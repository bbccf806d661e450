"""`reconcile`: make the index agree with the store for one tenant, version by version, resumably.

Its phases (`ReconcilePhase`, saved in the checkpoint as their numbers), in order:

- `CHECK_INDEXED`: page through the index's (memory id, version) pairs and read those memories
  from the store. A memory whose stored version is newer is re-embedded and rewritten (stale);
  a memory the store no longer holds, or holds archived or deleted, loses its document (orphan:
  only documents the index actually holds are counted);
- `COUNT`: compare the index's document count with the store's searchable memories;
- `INDEX_MISSING` (only if the index holds fewer): page through the store's searchable memories
  and index those the index lacks;
- `DONE`.

Counting cannot replace the version check: an index holding an older version of every memory
has exactly the store's count.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from rearview.models import Memory, MemoryFilter
from rearview.service import indexing
from rearview.service.indexing import INDEXED_STATUSES
from rearview.service.keyword_context import reindex_contexts
from rearview.service.lifecycle.context import JobContext
from rearview.service.lifecycle.reports import ReconcileReport
from rearview.service.lifecycle.runner import Checkpoint, JobState


class ReconcilePhase(IntEnum):
    """Where a reconcile run is; the values are what checkpoints hold (do not renumber).

    `START` (0) is a run that has not begun; `settle` moves it to `CHECK_INDEXED`. Checkpoints
    of the count-based reconcile also used 0, for a scan of the store whose cursor means nothing
    to the index: such a run starts over. Their `COUNT` (1), re-index (2, a scan of the store's
    searchable memories, now `INDEX_MISSING`) and `DONE` (3) continue as they are.
    """

    START = 0
    COUNT = 1
    INDEX_MISSING = 2
    DONE = 3
    CHECK_INDEXED = 4


class ReconcileJob:
    """A `ResumableJob`: fix stale and orphan documents page by page, then index what is missing.

    `INDEX_MISSING` needs to know which memories the index holds: the first such step of a run
    reads every (memory id, version) pair of the tenant once, and keeps the ids in memory for
    the rest of the run (a few dozen bytes per memory; nothing of it goes into the checkpoint).
    """

    def __init__(self, ctx: JobContext, report: ReconcileReport) -> None:
        self.ctx = ctx
        self.report = report
        self._indexed_ids: set[str] | None = None

    def done(self, state: JobState) -> bool:
        return state.phase == ReconcilePhase.DONE

    def settle(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Start (or restart an old checkpoint's first phase) at `CHECK_INDEXED`; writes are idempotent."""
        if state.phase == ReconcilePhase.START:
            state.phase, state.cursor = ReconcilePhase.CHECK_INDEXED, None

    def step(self, state: JobState, checkpoint: Checkpoint) -> None:
        phase = ReconcilePhase(state.phase)
        if phase is ReconcilePhase.CHECK_INDEXED:
            state.cursor = self._check_indexed(state.cursor)
            if state.cursor is None:
                state.phase = ReconcilePhase.COUNT
        elif phase is ReconcilePhase.COUNT:
            state.phase = (
                ReconcilePhase.INDEX_MISSING if self._index_lacks_documents() else ReconcilePhase.DONE
            )
        else:
            state.cursor = self._index_missing(state.cursor)
            if state.cursor is None:
                state.phase = ReconcilePhase.DONE

    def _check_indexed(self, cursor: str | None) -> str | None:
        """One page of the index: rewrite stale documents, drop orphans; the next page's cursor."""
        tenant_id, service = self.ctx.tenant_id, self.ctx.service
        page = service.index.versions(tenant_id, cursor, self.ctx.config.page_size)
        ids = [memory_id for memory_id, _ in page.items]  # versions and statuses: no recall bookkeeping
        stored = {m.id: m for m in service.store.get_many(tenant_id, ids, recalls=False)}
        stale: list[Memory] = []
        orphans: list[str] = []
        for memory_id, indexed_version in page.items:
            memory = stored.get(memory_id)
            if memory is None or memory.status not in INDEXED_STATUSES:
                orphans.append(memory_id)
            elif memory.version > indexed_version:
                stale.append(memory)
        self.report.pages += 1
        self.report.scanned += len(page.items)
        if orphans:
            service.index.erase(tenant_id, orphans)  # a purged memory's text must not outlive it
            self.report.orphans_removed += len(orphans)
        self._index(stale)
        self.report.stale_fixed += len(stale)
        return page.cursor

    def _index_lacks_documents(self) -> bool:
        """Record the store's and the index's counts; True when the index holds fewer documents."""
        report = self.report
        by_status = self.ctx.service.store.stats(self.ctx.tenant_id).by_status
        report.store_indexed = sum(by_status.get(s.value, 0) for s in INDEXED_STATUSES)
        report.index_documents = self.ctx.service.index.count(self.ctx.tenant_id)
        return report.index_documents < report.store_indexed

    def _index_missing(self, cursor: str | None) -> str | None:
        """One page of the store's searchable memories: index those the index lacks; the next cursor."""
        page = self.ctx.service.store.list_memories(
            self.ctx.tenant_id,
            MemoryFilter(statuses=INDEXED_STATUSES),
            cursor=cursor,
            limit=self.ctx.config.page_size,
        )
        indexed = self._indexed()
        missing = [m for m in page.items if m.id not in indexed]
        self.report.pages += 1
        self.report.scanned += len(page.items)
        self._index(missing)
        self.report.missing_indexed += len(missing)
        return page.cursor

    def _indexed(self) -> set[str]:
        """Every memory id the index holds for the tenant (read once per run)."""
        if self._indexed_ids is None:
            index, ids, cursor = self.ctx.service.index, set[str](), None
            while True:
                page = index.versions(self.ctx.tenant_id, cursor, self.ctx.config.versions_page)
                ids.update(memory_id for memory_id, _ in page.items)
                if (cursor := page.cursor) is None:
                    break
            self._indexed_ids = ids
        return self._indexed_ids

    def _index(self, items: Sequence[Memory]) -> None:
        """Embed and upsert `items` in batches (the index keeps a newer version if one landed meanwhile)."""
        service, batch = self.ctx.service, self.ctx.config.reindex_batch
        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            contexts = reindex_contexts(service.store, self.ctx.tenant_id, chunk)
            service.index.upsert(
                indexing.index_documents(
                    service.embedder, chunk, contexts, query_view=service.config.query_view
                )
            )
