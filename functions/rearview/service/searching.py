"""The search path: hybrid recall, fusion, re-ranking, and the reinforcement a recall earns.

Guarantees: a search never fails because the index or embedder is down (it answers from what
still works and says `degraded`); the store is the truth (an index hit the store no longer
holds, or that no longer matches the filter, is dropped); each candidate is read once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from rearview.clock import Clock
from rearview.errors import EmbedderError, IndexUnavailableError, InvalidInputError
from rearview.models import (
    Memory,
    MemoryFilter,
    MemoryStatus,
    SearchHit,
    SearchRequest,
    SearchResult,
)
from rearview.ports import Embedder, IndexQuery, MemoryIndex, MemoryStore, Touch, Vector
from rearview.service import validation
from rearview.service.config import ServiceConfig
from rearview.service.ranking import Fused, reciprocal_rank_fusion, rerank_score
from rearview.service.rendering import render_context
from rearview.service.store_search import store_keyword_search
from rearview.service.visibility import scoped
from rearview.text import estimate_tokens

ARCHIVED_RELEVANCE = 0.5
"""Scale of an archived (keyword-only) match's relevance: like a live memory found by one of two channels."""


class _Ranked(NamedTuple):
    hits: list[SearchHit]
    """Best first."""
    stored: dict[str, Memory]
    """The stored records the hits were scored from, by id (read once per search)."""


class Searcher:
    """`MemoryService.search`, with the collaborators it reads and the policies it ranks by."""

    def __init__(
        self, store: MemoryStore, index: MemoryIndex, embedder: Embedder, clock: Clock, config: ServiceConfig
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.config = config

    def search(self, tenant_id: str, req: SearchRequest) -> SearchResult:
        """Hybrid recall: BM25 + k-NN inside the filter, RRF, then importance/recency/strength re-rank.

        Never fails because the index or embedder is down: it answers from what still works and
        sets `degraded`. Returned memories are reinforced unless `reinforce` is false.

        With `archived` among the filter's statuses (`include_archived`), archived memories are
        matched too, from what the store keeps of them: BM25 over the previews of the newest
        `fallback_scan_limit` archived stubs in the filter. A keyword-only match, an archived hit's
        relevance is scaled by `ARCHIVED_RELEVANCE` (what a live memory found by one of two
        channels gets); it carries its preview as content and is not reinforced.

        Only memories `req.agent_id` may see are matched: the filter is scoped to it (`visibility`).
        """
        query = validation.check_query(req.query)
        validation.check_filter(req.filter)
        req = req.model_copy(update={"filter": scoped(req.filter, req.agent_id)})
        top_k = validation.check_top_k(req.top_k)
        if req.min_score < 0:
            raise InvalidInputError("min_score", f"must be >= 0 (got {req.min_score})")
        depth = max(self.config.ranking.candidates_per_channel, 2 * top_k)
        reasons: list[str] = []
        fused = self._fuse(tenant_id, req, query, depth, reasons)
        ranked = self._rank(tenant_id, fused, req.filter)
        results = [h for h in ranked.hits if h.score >= req.min_score][:top_k]
        if req.reinforce and results:
            results = self._reinforce(tenant_id, results, ranked.stored)
        context = render_context(results)
        return SearchResult(
            query=query,
            results=results,
            context=context,
            token_estimate=estimate_tokens(context),
            degraded=bool(reasons),
            degraded_reason="; ".join(reasons) or None,
        )

    def _fuse(
        self, tenant_id: str, req: SearchRequest, query: str, depth: int, reasons: list[str]
    ) -> list[Fused]:
        """Live candidates fused across channels, then archived ones (scaled) that are not already there."""
        k = self.config.ranking.rrf_k
        fused: list[Fused] = []
        live = tuple(s for s in req.filter.statuses if s is not MemoryStatus.ARCHIVED)
        if live:
            flt = req.filter.model_copy(update={"statuses": live})
            fused = reciprocal_rank_fusion(self._live_channels(tenant_id, req, flt, depth, reasons), k=k)
        if MemoryStatus.ARCHIVED in req.filter.statuses:
            flt = req.filter.model_copy(update={"statuses": (MemoryStatus.ARCHIVED,)})
            limit = self.config.fallback_scan_limit
            matches = store_keyword_search(self.store, tenant_id, flt, query, depth, limit)
            seen = {f.memory_id for f in fused}
            fused += [
                replace(f, relevance=f.relevance * ARCHIVED_RELEVANCE)
                for f in reciprocal_rank_fusion({"keyword": matches}, k=k)
                if f.memory_id not in seen
            ]
        return fused

    def _live_channels(
        self, tenant_id: str, req: SearchRequest, flt: MemoryFilter, depth: int, reasons: list[str]
    ) -> dict[str, list[str]]:
        """The index's keyword and vector channels, or the store's keyword fallback when the index is down."""
        query = req.query.strip()
        vector = self._embed_query(query, reasons) if "vector" in req.channels else None
        text = query if "keyword" in req.channels else None
        try:
            hits = self.index.search(
                IndexQuery(tenant_id=tenant_id, filter=flt, limit=depth, text=text, vector=vector)
            )
        except IndexUnavailableError as exc:
            reasons.append(f"index unavailable ({exc}); answered from the store's recent memories")
            return {
                "keyword": store_keyword_search(
                    self.store, tenant_id, flt, query, depth, self.config.fallback_scan_limit
                )
            }
        return {"keyword": [i for i, _ in hits.keyword], "vector": [i for i, _ in hits.vector]}

    def _embed_query(self, query: str, reasons: list[str]) -> Vector | None:
        try:
            return self.embedder.embed_query(query)
        except EmbedderError as exc:
            reasons.append(f"embedder unavailable ({exc}); keyword channel only")
            return None

    def _rank(self, tenant_id: str, fused: list[Fused], filter: MemoryFilter) -> _Ranked:
        """Hits best first, and the stored records they were scored from (read once per search)."""
        by_id = {m.id: m for m in self.store.get_many(tenant_id, [f.memory_id for f in fused])}
        now = self.clock.now()
        decay = self.config.policy(tenant_id).decay
        hits: list[SearchHit] = []
        for f in fused:
            memory = by_id.get(f.memory_id)
            if memory is None or not filter.matches(memory):
                continue  # index drift: the store is the truth
            memory = memory.model_copy(update={"strength": decay.effective(memory, now)})
            score = rerank_score(f.relevance, memory, now, self.config.ranking)
            hits.append(_hit(memory, score, f))
        hits.sort(key=lambda h: (-h.score, h.id))
        return _Ranked(hits, by_id)

    def _reinforce(self, tenant_id: str, hits: list[SearchHit], stored: dict[str, Memory]) -> list[SearchHit]:
        """Raise each recalled memory's anchored strength and restart its decay clock (not archived ones).

        Uses the records `_rank` read: reinforcement is best-effort bookkeeping, not worth a re-read.
        """
        now = self.clock.now()
        policy = self.config.reinforcement
        recalled = (stored[h.id] for h in hits if h.id in stored)
        touches = [
            Touch(m.id, policy.reinforced(m.strength, policy.recall_boost), now, m.access_count + 1)
            for m in recalled
            if m.status is not MemoryStatus.ARCHIVED
        ]
        self.store.touch(tenant_id, touches)
        strength = {t.memory_id: t.strength for t in touches}
        return [
            h.model_copy(update={"strength": strength[h.id], "last_accessed_at": now})
            if h.id in strength
            else h
            for h in hits
        ]


def _hit(memory: Memory, score: float, fused: Fused) -> SearchHit:
    return SearchHit(
        id=memory.id,
        content=memory.content,
        type=memory.type,
        score=round(score, 6),
        relevance=round(fused.relevance, 6),
        confidence=memory.confidence,
        importance=memory.importance,
        strength=memory.strength,
        tags=memory.tags,
        agent_id=memory.agent_id,
        session_id=memory.session_id,
        status=memory.status,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        event_time=memory.event_time,
        last_accessed_at=memory.last_accessed_at,
        keyword_rank=fused.keyword_rank,
        vector_rank=fused.vector_rank,
    )
