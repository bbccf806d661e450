"""`reconcile`: make the index agree with the store for one tenant, resumably like the scans.

Its phases, in order (`ReconcilePhase`, saved in the checkpoint as their numbers):

- `DROP_UNINDEXED`: page through archived and deleted memories, remove their index documents;
- `COUNT`: compare the index's document count with the store's searchable memories;
- `REINDEX` (only if the index holds fewer): re-embed and upsert every searchable memory;
- `DONE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum

from rearview.models import Memory, MemoryFilter, MemoryStatus
from rearview.ports import IndexDocument
from rearview.service.keyword_context import reindex_contexts
from rearview.service.lifecycle.context import JobContext
from rearview.service.lifecycle.reports import ReconcileReport
from rearview.service.lifecycle.runner import Checkpoint, JobState

INDEXED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)
UNINDEXED_STATUSES = (MemoryStatus.ARCHIVED, MemoryStatus.DELETED)


class ReconcilePhase(IntEnum):
    """Where a reconcile run is; the values are what checkpoints hold (do not renumber)."""

    DROP_UNINDEXED = 0
    COUNT = 1
    REINDEX = 2
    DONE = 3


class ReconcileJob:
    """A `ResumableJob`: drop unindexed memories' documents, count, re-index if documents are missing."""

    def __init__(self, ctx: JobContext, report: ReconcileReport) -> None:
        self.ctx = ctx
        self.report = report

    def done(self, state: JobState) -> bool:
        return state.phase >= ReconcilePhase.DONE

    def settle(self, state: JobState, checkpoint: Checkpoint) -> None:
        """Nothing to settle: each step's index writes are idempotent and redone on resume."""

    def step(self, state: JobState, checkpoint: Checkpoint) -> None:
        phase = ReconcilePhase(state.phase)
        if phase is ReconcilePhase.COUNT:
            state.phase = ReconcilePhase.REINDEX if self._index_lacks_documents() else ReconcilePhase.DONE
            return
        dropping = phase is ReconcilePhase.DROP_UNINDEXED
        page = self.ctx.service.store.list(
            self.ctx.tenant_id,
            MemoryFilter(statuses=UNINDEXED_STATUSES if dropping else INDEXED_STATUSES),
            cursor=state.cursor,
            limit=self.ctx.config.page_size,
        )
        self.report.scanned += len(page.items)
        if dropping:
            self._drop(page.items)
        else:
            self._reindex(page.items)
        self.report.pages += 1
        state.cursor = page.cursor
        if state.cursor is None:
            state.phase = ReconcilePhase.COUNT if dropping else ReconcilePhase.DONE

    def _index_lacks_documents(self) -> bool:
        """Record the store's and the index's counts; True when the index holds fewer documents."""
        report = self.report
        by_status = self.ctx.service.store.stats(self.ctx.tenant_id).by_status
        report.store_indexed = sum(by_status.get(s.value, 0) for s in INDEXED_STATUSES)
        report.index_documents = self.ctx.service.index.count(self.ctx.tenant_id)
        report.surplus = max(0, report.index_documents - report.store_indexed)
        return report.index_documents < report.store_indexed

    def _drop(self, items: Sequence[Memory]) -> None:
        if items:
            self.ctx.service.index.delete(self.ctx.tenant_id, [m.id for m in items])
            self.report.orphans_removed += len(items)

    def _reindex(self, items: Sequence[Memory]) -> None:
        service, batch = self.ctx.service, self.ctx.config.reindex_batch
        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            vectors = service.embedder.embed_documents([m.content for m in chunk])
            contexts = reindex_contexts(service.store, self.ctx.tenant_id, chunk)
            service.index.upsert(
                [IndexDocument(m, vectors[i], context=contexts.get(m.id)) for i, m in enumerate(chunk)]
            )
            self.report.reindexed += len(chunk)
