"""The degraded search path: keyword scoring over a bounded page of the store's recent memories."""

from __future__ import annotations

from rearview.bm25 import bm25_rank
from rearview.models import MemoryFilter
from rearview.ports import MemoryStore
from rearview.text import tokens


def store_keyword_search(
    store: MemoryStore, tenant_id: str, filter: MemoryFilter, query: str, limit: int, scan_limit: int
) -> list[str]:
    """Ids of the newest `scan_limit` matching memories ranked by BM25 on `query` (best first).

    Used only when the index is unavailable: bounded work, filtered inside the store query.
    """
    page = store.list(tenant_id, filter, limit=scan_limit)
    ranked = bm25_rank([(m.id, tokens(m.content)) for m in page.items], query, limit)
    return [memory_id for memory_id, _ in ranked]
