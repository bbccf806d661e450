"""The search path: hybrid recall, then `ranking.rank`, and the reinforcement a relevant recall earns.

Guarantees: a search never fails because the index or embedder is down (it answers from what
still works and says `degraded`); the store is the truth (an index hit the store no longer
holds, or that no longer matches the filter, is dropped); each candidate is read once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from rearview.errors import EmbedderError, IndexUnavailableError, StoreError
from rearview.limits import query_terms_problem
from rearview.models import (
    HitExplanation,
    Memory,
    MemoryFilter,
    MemoryStatus,
    SearchHit,
    SearchRequest,
    SearchResult,
)
from rearview.ports import Embedder, IndexQuery, MemoryIndex, MemoryStore, Touch, Vector
from rearview.service.config import ServiceConfig
from rearview.service.search.as_of import as_of_filter, check_as_of, state_at
from rearview.service.search.baseline import Baselines
from rearview.service.search.candidates import Candidates, ChannelScores, Phrasing, Ranked
from rearview.service.search.centring import centred
from rearview.service.search.collapse import collapse_extracted
from rearview.service.search.contested import active_contesters
from rearview.service.search.expansion import HOP_LIMIT, bridge_entities
from rearview.service.search.factors import subject_of
from rearview.service.search.fusion import calibrated_fuse, hop_seeds
from rearview.service.search.phrasings import alternatives_needed
from rearview.service.search.ranking import returned
from rearview.service.search.rendering import render_context
from rearview.service.search.store_search import store_keyword_search
from rearview.service.visibility import scoped
from rearview.shared.clock import Clock
from rearview.shared.yield_points import YIELD_EVERY, yield_point
from rearview.text import estimate_tokens

log = logging.getLogger(__name__)


class _Channels(NamedTuple):
    """The live channels' hits; None for a channel that did not run."""

    keyword: ChannelScores | None
    vector: ChannelScores | None
    keyword_ceiling: float = 0.0
    vector_baselines: tuple[float, float] | None = None
    vector_cues: Mapping[str, int] = {}


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
        self.baselines = Baselines(embedder)

    def search(self, tenant_id: str, req: SearchRequest) -> SearchResult:
        """Hybrid recall: BM25 + k-NN inside the filter, fused and re-ranked by `ranking.rank`.

        Never fails because the index or embedder is down: it answers from what still works and
        sets `degraded`. Returned memories whose relevance reaches
        `ReinforcementPolicy.min_relevance` are reinforced, unless `reinforce` is false.

        With `archived` among the filter's statuses (`include_archived`), archived memories are
        matched too, from what the store keeps of them: BM25 over the previews of the newest
        `fallback_scan_limit` archived stubs in the filter. A keyword-only match, an archived hit's
        relevance is scaled by `ranking_policy.ARCHIVED_RELEVANCE`; it carries its preview as content and
        is not reinforced.

        Only memories `req.agent_id` may see are matched: the filter is scoped to it (`visibility`).
        A memory an ingest extracted from a message and the message's memory take one place
        (`collapse.collapse_extracted`): the better ranked lists the other in `related`; so do two
        agents' copies of one text (the caller's own copy takes the place).
        """
        if req.as_of is not None:
            check_as_of(req.as_of, self.clock.now(), self.config.as_of_days)
        top_k = req.top_k
        reasons: list[str] = []
        asked = self._scoped(req)
        candidates, indexed = self._candidates(tenant_id, asked, top_k, reasons)
        yield_point()
        policy = self.config.ranking
        ranked = returned(candidates, policy)
        if indexed and req.alternatives and alternatives_needed(req.query, ranked, policy):
            candidates = self._with_alternatives(tenant_id, asked, candidates, top_k, reasons)
            ranked = returned(candidates, policy)
        relevant = (r for r in ranked if round(r.score, 6) >= req.min_score)
        kept = collapse_extracted(relevant, top_k, req.agent_id)
        phrasings = [candidates.query, *(a.text for a in candidates.alternatives)]
        contested = active_contesters(
            self.store, tenant_id, (c.ranked.memory for c in kept), candidates.memories, req.agent_id,
            candidates.now,
        )  # fmt: skip
        results = [
            _hit(c.ranked, c.related, policy.relevant_at, phrasings, contested.get(c.ranked.memory.id, []))
            for c in kept
        ]  # hits built for these only
        if req.reinforce and results and req.as_of is None:  # looking back is no use of a memory
            results = self._reinforce(tenant_id, results, candidates.memories)
        context = render_context(results, req.as_of)
        return SearchResult(
            query=candidates.query,
            results=results,
            context=context,
            token_estimate=estimate_tokens(context),
            degraded=bool(reasons),
            degraded_reason="; ".join(reasons) or None,
        )

    def candidates(self, tenant_id: str, req: SearchRequest) -> Candidates:
        """What `search` would rank for `req`, without ranking or reinforcing.

        For benchmarks that re-rank the same candidates under other `RankingPolicy` constants: every
        phrasing's hits, whatever the query alone finds (`phrasings.returned_as_searched` replays
        the search's choice).
        """
        reasons: list[str] = []
        asked = self._scoped(req)
        first, indexed = self._candidates(tenant_id, asked, req.top_k, reasons)
        if not (indexed and req.alternatives):
            return first
        return self._with_alternatives(tenant_id, asked, first, req.top_k, reasons)

    def _candidates(
        self, tenant_id: str, req: SearchRequest, top_k: int, reasons: list[str]
    ) -> tuple[Candidates, bool]:
        """The query's channel hits and stored candidates, and whether the index answered.

        Live hits from the index, archived ones from the store; each candidate with its strength now.
        `req` is scoped (`_scoped`). `_with_alternatives` adds the alternatives' hits. With the index
        down, the store's keyword fallback answers the query (and the index is not asked again for
        the alternatives).
        """
        query = req.query
        depth = max(self.config.ranking.candidates_per_channel, 2 * top_k)
        channels = _Channels(None, None)
        archived_ceiling = 0.0
        indexed = False
        flt = _live(req.filter)
        if flt is not None:
            try:
                (channels,) = self._phrasing_channels(tenant_id, req, flt, [query], depth, reasons)
                indexed = True
            except IndexUnavailableError as exc:
                reasons.append(f"index unavailable ({exc}); answered from the store's recent memories")
                limit = self.config.fallback_scan_limit
                keyword, ceiling = store_keyword_search(self.store, tenant_id, flt, query, depth, limit)
                channels = _Channels(keyword, None, ceiling)
        archived: ChannelScores = []
        if MemoryStatus.ARCHIVED in req.filter.statuses:
            flt = req.filter.model_copy(update={"statuses": (MemoryStatus.ARCHIVED,)})
            limit = self.config.fallback_scan_limit
            archived, archived_ceiling = store_keyword_search(self.store, tenant_id, flt, query, depth, limit)
        found = (channels.keyword, channels.vector, archived)
        ids = dict.fromkeys(i for hits in found for i, _ in hits or ())
        yield_point()
        now = req.as_of or self.clock.now()
        first = Candidates(
            query=query,
            now=now,
            memories=self._held(tenant_id, list(ids), req.filter, now),
            keyword=channels.keyword,
            vector=channels.vector,
            archived=archived,
            reference=req.reference_time,
            keyword_ceiling=channels.keyword_ceiling,
            archived_ceiling=archived_ceiling,
            vector_baselines=channels.vector_baselines,
            vector_cues=channels.vector_cues,
        )
        if channels.keyword is None or flt is None:
            return first, indexed
        yield_point()
        return self._second_hop(tenant_id, first, flt, now), indexed

    def _with_alternatives(
        self, tenant_id: str, req: SearchRequest, first: Candidates, top_k: int, reasons: list[str]
    ) -> Candidates:
        """`first` (the query's candidates) with the alternatives' hits, as if searched together.

        Each alternative is read `candidates_per_alternative` deep (at least `top_k`), and the second
        hop is asked again from the best hits of every phrasing. `req` is scoped (`_scoped`). With the
        index down, or no live status searched, `first` is the answer.
        """
        flt = _live(req.filter)
        if flt is None:
            return first
        texts = req.phrasings[1:]
        depth = max(self.config.ranking.candidates_per_alternative, top_k)
        try:
            found = self._phrasing_channels(tenant_id, req, flt, texts, depth, reasons)
        except IndexUnavailableError as exc:
            reasons.append(f"index unavailable ({exc}); the alternatives were not searched")
            return first
        alternatives = tuple(
            Phrasing(text, c.keyword, c.vector, c.keyword_ceiling, c.vector_baselines, c.vector_cues)
            for text, c in zip(texts, found, strict=True)
        )
        new = dict.fromkeys(
            i for alt in alternatives for hits in (alt.keyword, alt.vector) for i, _ in hits or ()
        )
        held = self._held(tenant_id, [i for i in new if i not in first.memories], req.filter, first.now)
        merged = replace(
            first, memories={**first.memories, **held}, alternatives=alternatives, second_hop=(),
            fused=None, fused_by=None,
        )  # fmt: skip
        if first.keyword is None:
            return merged
        yield_point()
        return self._second_hop(tenant_id, merged, flt, first.now)

    def _scoped(self, req: SearchRequest) -> SearchRequest:
        """`req` with its filter as of `as_of` and scoped to what `agent_id` may see."""
        flt = req.filter if req.as_of is None else as_of_filter(req.filter, req.as_of)
        return req.model_copy(update={"filter": scoped(flt, req.agent_id)})

    def _second_hop(self, tenant_id: str, first: Candidates, flt: MemoryFilter, now: datetime) -> Candidates:
        """`first` with the keyword hits of the bridge entities of its best hits (`expansion`).

        Best-effort: with no bridge, or the index down, the first hop's candidates are the answer.
        """
        policy = self.config.ranking
        if policy.hop_weight <= 0 or policy.hop_seeds <= 0:
            return first
        first = replace(first, fused=tuple(calibrated_fuse(first, policy)), fused_by=policy)
        seeds = [first.memories[i] for i in hop_seeds(first, policy)]
        subjects = {s for m in first.memories.values() if (s := subject_of(m)) is not None}
        bridges = bridge_entities(seeds, first.query, subjects)
        while bridges and query_terms_problem(" ".join(bridges)):
            bridges.pop()  # the hop costs no more posting lists than a query may have
        if not bridges:
            return first
        text = " ".join(bridges)
        yield_point()
        try:
            hits = self.index.search(IndexQuery(tenant_id=tenant_id, filter=flt, limit=HOP_LIMIT, text=text))
        except IndexUnavailableError:
            return first
        new = [i for i, _ in hits.keyword if i not in first.memories]
        held = {**first.memories, **self._held(tenant_id, new, flt, now)} if new else first.memories
        return replace(first, memories=held, second_hop=hits.keyword)

    def _held(self, tenant_id: str, ids: list[str], filter: MemoryFilter, now: datetime) -> dict[str, Memory]:
        """The candidates the store holds and the filter matches, with their strength decayed to now.

        Read once per search; an index hit the store no longer holds or the filter no longer
        matches is index drift, and dropped: the store is the truth. With `filter.as_of`, each is
        the memory as it was then, kept if it was active then and the filter matches it as it was.
        """
        decay = self.config.policy(tenant_id).decay
        held: dict[str, Memory] = {}
        for n, stored in enumerate(self.store.get_many(tenant_id, ids), 1):
            m = self._as_it_was(tenant_id, stored, filter) if filter.matches(stored) else None
            if m is not None:
                held[m.id] = m.model_copy(update={"strength": decay.effective(m, now)})
            if n % YIELD_EVERY == 0:
                yield_point()
        return held

    def _as_it_was(self, tenant_id: str, memory: Memory, filter: MemoryFilter) -> Memory | None:
        """`memory` itself, or with `filter.as_of` as it was then (None: not active then, or unmatched)."""
        if filter.as_of is None:
            return memory
        then = state_at(memory, self.store.history(tenant_id, memory.id), filter.as_of)
        matching = filter.model_copy(update={"as_of": None, "statuses": (MemoryStatus.ACTIVE,)})
        return then if then is not None and matching.matches(then) else None

    def _phrasing_channels(
        self,
        tenant_id: str,
        req: SearchRequest,
        flt: MemoryFilter,
        phrasings: list[str],
        depth: int,
        reasons: list[str],
    ) -> list[_Channels]:
        """The index's channels for each of `phrasings`, each `depth` deep.

        Every phrasing is embedded in one embedder call and searched on both channels (those of
        `req.channels`). Raises IndexUnavailableError with the index down.
        """
        vectors = self._embed_queries(phrasings, reasons) if "vector" in req.channels else None
        yield_point()
        out: list[_Channels] = []
        for n, text in enumerate(phrasings):
            vector = None if vectors is None else vectors[n]
            hits = self.index.search(
                IndexQuery(
                    tenant_id=tenant_id, filter=flt, limit=depth, vector=vector,
                    text=text if "keyword" in req.channels else None,
                )
            )  # fmt: skip
            out.append(
                _Channels(
                    hits.keyword if "keyword" in req.channels else None,
                    hits.vector if vector is not None else None,
                    hits.keyword_ceiling,
                    self._baselines(vector, reasons) if vector is not None else None,
                    hits.vector_cues,
                )
            )
            yield_point()
        return out

    def _baselines(self, vector: Vector, reasons: list[str]) -> tuple[float, float] | None:
        """The query's baselines (`baseline.Baselines`); None (relative scale) if the embedder fails."""
        try:
            return self.baselines.of(vector)
        except EmbedderError as exc:
            reasons.append(f"embedder unavailable ({exc}); vector scores relative to the candidates")
            return None

    def _embed_queries(self, texts: list[str], reasons: list[str]) -> Vector | None:
        """The phrasings' query vectors in one embedder call (row i: `texts[i]`), or None if it fails.

        Each centred on its script's mean question (`centring.centred`) when the config says so.
        """
        import numpy as np

        try:
            if len(texts) == 1:
                matrix: Vector = self.embedder.embed_query(texts[0])[None, :]
            elif callable(batch := getattr(self.embedder, "embed_queries", None)):
                matrix = batch(texts)
            else:
                matrix = np.stack([self.embedder.embed_query(t) for t in texts])
            weight = self.config.query_centring
            return centred(texts, matrix, self.baselines.question_means(), weight) if weight else matrix
        except EmbedderError as exc:
            reasons.append(f"embedder unavailable ({exc}); keyword channel only")
            return None

    def _reinforce(
        self, tenant_id: str, hits: list[SearchHit], held: Mapping[str, Memory]
    ) -> list[SearchHit]:
        """Reinforce the relevant hits: strength now + `recall_boost`, anchored at now (not archived ones).

        Only hits whose relevance reaches `min_relevance`: a memory that merely came back for an
        unrelated query earns nothing. The boost is added to the *decayed* strength, so a memory
        unused for a year and recalled once is weaker than a fresh one. Uses the records the
        ranking read (strength already decayed): reinforcement is best-effort bookkeeping, not
        worth a re-read.
        """
        now = self.clock.now()
        policy = self.config.reinforcement
        recalled = (held[h.id] for h in hits if h.id in held and h.relevance >= policy.min_relevance)
        touches = [
            Touch(m.id, policy.reinforced(m.strength, policy.recall_boost), now, m.access_count + 1)
            for m in recalled
            if m.status is not MemoryStatus.ARCHIVED
        ]
        if not touches:
            return hits
        try:
            self.store.touch(tenant_id, touches)
        except StoreError as exc:  # e.g. a full disk: the recall still answers, unreinforced
            log.warning("recall reinforcement skipped: %s", exc)
            return hits
        strength = {t.memory_id: t.strength for t in touches}
        return [
            h.model_copy(update={"strength": strength[h.id], "last_accessed_at": now})
            if h.id in strength
            else h
            for h in hits
        ]


def _hit(
    ranked: Ranked, related: list[str], relevant_at: float, phrasings: list[str], contested_by: list[str]
) -> SearchHit:
    memory, fused, factors = ranked.memory, ranked.fused, ranked.factors
    cue = memory.cues[fused.cue].text if fused.cue is not None and fused.cue < len(memory.cues) else None
    return SearchHit(
        id=memory.id,
        related=related,
        contested_by=contested_by,
        content=memory.content,
        type=memory.type,
        score=round(ranked.score, 6),
        relevance=round(fused.relevance, 6),
        relevant=fused.relevance >= relevant_at,
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
        verified_at=memory.verified_at,
        keyword_rank=fused.keyword_rank,
        vector_rank=fused.vector_rank,
        source=memory.source,
        speaker=memory.speaker,
        source_agents=memory.source_agents,
        source_speakers=memory.source_speakers,
        why=HitExplanation(
            relevance=round(fused.relevance, 6),
            keyword_score=round(fused.keyword_score, 6),
            vector_score=round(fused.vector_score, 6),
            importance=round(factors.importance, 6),
            recency=round(factors.recency, 6),
            strength=round(factors.strength, 6),
            subject=factors.subject,
            temporal=round(factors.temporal, 6),
            consolidated=factors.consolidated,
            cue=cue,
            phrasing=phrasings[fused.phrasing] if 0 < fused.phrasing < len(phrasings) else None,
        ),
    )


def _live(flt: MemoryFilter) -> MemoryFilter | None:
    """`flt` with its live statuses only (the index's); None when it asks for archived ones alone."""
    live = tuple(s for s in flt.statuses if s is not MemoryStatus.ARCHIVED)
    return flt.model_copy(update={"statuses": live}) if live else None
