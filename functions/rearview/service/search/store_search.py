"""The degraded search path: keyword scoring over a bounded page of the store's recent memories."""

from __future__ import annotations

from rearview.models import MemoryFilter
from rearview.ports import MemoryStore
from rearview.text import tokens
from rearview.text.bm25 import bm25_search


def store_keyword_search(
    store: MemoryStore, tenant_id: str, filter: MemoryFilter, query: str, limit: int, scan_limit: int
) -> tuple[list[tuple[str, float]], float]:
    """(id, BM25) of the newest `scan_limit` matching memories that match `query`, and the BM25 scale.

    Hits best first; the scale is the query's over that page (`ChannelHits.keyword_ceiling`).

    Used when the index is unavailable, and for archived memories (the index no longer holds
    them): bounded work, filtered inside the store query.
    """
    page = store.list_memories(tenant_id, filter, limit=scan_limit)
    return bm25_search([(m.id, tokens(m.content)) for m in page.items], query, limit)
