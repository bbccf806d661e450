"""Rebuild the derived index from the store (the source of truth)."""

from __future__ import annotations

from collections.abc import Callable

from rearview.models import MemoryFilter, MemoryStatus
from rearview.ports import IndexDocument, MemoryIndex
from rearview.service.memory_service import MemoryService

REINDEX_BATCH = 64
INDEXED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)


def reindex_tenant(
    service: MemoryService,
    tenant_id: str,
    target: MemoryIndex | None = None,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Re-embed and upsert every active/superseded memory of a tenant into `target` (default: the live index).

    Idempotent and restartable: upserts replace documents by id. Returns how many were indexed.
    """
    index = target or service.index
    flt = MemoryFilter(statuses=INDEXED_STATUSES)
    cursor: str | None = None
    total = 0
    while True:
        page = service.store.list(tenant_id, flt, cursor=cursor, limit=REINDEX_BATCH)
        if page.items:
            vectors = service.embedder.embed_documents([m.content for m in page.items])
            index.upsert([IndexDocument(m, vectors[i]) for i, m in enumerate(page.items)])
            total += len(page.items)
            if progress is not None:
                progress(len(page.items))
        cursor = page.cursor
        if cursor is None:
            return total
