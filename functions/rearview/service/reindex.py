"""Rebuild the derived index from the store (the source of truth)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from rearview.models import Memory, MemoryFilter
from rearview.ports import IndexDocument, MemoryIndex, VersionedIndex
from rearview.service import indexing
from rearview.service.indexing import INDEXED_STATUSES
from rearview.service.keyword_context import reindex_contexts
from rearview.service.memory_service import MemoryService

REINDEX_BATCH = 64

Progress = Callable[[int], object]


def _pages(service: MemoryService, tenant_id: str) -> Iterator[list[Memory]]:
    flt = MemoryFilter(statuses=INDEXED_STATUSES)
    cursor: str | None = None
    while True:
        page = service.store.list_memories(tenant_id, flt, cursor=cursor, limit=REINDEX_BATCH)
        if page.items:
            yield page.items
        cursor = page.cursor
        if cursor is None:
            return


def index_documents(service: MemoryService, tenant_id: str, items: Sequence[Memory]) -> list[IndexDocument]:
    """Full documents of `items`: re-embedded, each with its keyword context rebuilt from the store."""
    contexts = reindex_contexts(service.store, tenant_id, items)
    return indexing.index_documents(service.embedder, items, contexts, query_view=service.config.query_view)


def reindex_tenant(
    service: MemoryService,
    tenant_id: str,
    write: Callable[[Sequence[IndexDocument]], None] | None = None,
    progress: Progress | None = None,
) -> int:
    """Re-embed every memory of a tenant the index holds (`INDEXED_STATUSES`) and upsert it (default: live).

    Every keyword context is rebuilt too (`keyword_context`; one store listing per session and page).

    Idempotent and restartable: upserts replace documents by id. Returns how many were indexed.
    """
    upsert = write or service.index.upsert
    total = 0
    for items in _pages(service, tenant_id):
        upsert(index_documents(service, tenant_id, items))
        total += len(items)
        if progress is not None:
            progress(len(items))
    return total


def reindex_all(
    service: MemoryService, tenants: Sequence[str], progress: Progress | None = None
) -> dict[str, int]:
    """Rebuild the index for `tenants`, in place or, for a `VersionedIndex`, as a new version.

    A new version is swapped in atomically once full (searches never see a half-built index). It is
    built only when `tenants` are every tenant the store holds: a version of some tenants would drop
    every other tenant from search when the alias moves to it, so a rebuild of some is in place.

    Writes that land on the old version while a versioned rebuild runs are re-applied after the
    switch by a second, in-place pass over the memories updated meanwhile (upserts are idempotent).
    """
    index: MemoryIndex = service.index
    if not isinstance(index, VersionedIndex) or not set(service.store.tenants()) <= set(tenants):
        return {t: reindex_tenant(service, t, progress=progress) for t in tenants}
    started = service.clock.now()
    version = (index.current_version() or 0) + 1
    index.create_version(version)
    counts = {
        t: reindex_tenant(service, t, lambda docs: index.upsert_into(version, docs), progress)
        for t in tenants
    }
    index.switch_alias(version)
    for tenant in tenants:
        for items in _pages(service, tenant):
            fresh = [m for m in items if m.updated_at >= started]
            if fresh:
                index.upsert(index_documents(service, tenant, fresh))
            if items[-1].updated_at < started:
                break  # pages are newest-first: nothing older can have changed
    return counts
