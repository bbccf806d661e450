"""MemoryService: the domain logic of Rearview, written once for every backend.

Guarantees:
- the store is the source of truth and is written first; the index is derived. An index or
  embedder failure never loses a write (the result says `indexed: false`; `rearview reindex`
  repairs) and never fails a search (the result says `degraded: true`);
- every check runs before anything is written; multi-record changes (supersede, merge) are
  committed atomically;
- every store and index call is scoped by the caller's tenant;
- strength is anchored at `last_accessed_at` and decays with time unused (`lifecycle_policy`):
  ranking and every view show the decayed value, nothing is rewritten as time passes;
- archived memories keep a stub in the store (`archival`); their body is in the `Archive`, which
  `restore` reads back and a hard forget erases.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from rearview.clock import Clock, SystemClock
from rearview.errors import (
    ArchiveError,
    ConflictError,
    EmbedderError,
    IndexUnavailableError,
    InvalidInputError,
    NotFoundError,
)
from rearview.ids import new_id
from rearview.models import (
    DEFAULT_AGENT,
    MAX_FORGET_BATCH,
    MAX_TAGS,
    ForgetRequest,
    ForgetResult,
    HistoryAction,
    HistoryEvent,
    HistoryResult,
    Memory,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    MemoryView,
    MetadataValue,
    SearchHit,
    SearchRequest,
    SearchResult,
    Stats,
    UpdateRequest,
    Visibility,
    WriteAction,
    WriteRequest,
    WriteResult,
)
from rearview.ports import (
    Archive,
    Embedder,
    IndexDocument,
    IndexQuery,
    MemoryIndex,
    MemoryStore,
    StoreWrite,
    Touch,
    Vector,
)
from rearview.service import validation
from rearview.service.archival import ARCHIVABLE_STATUSES, RestoreResult, archive_refs
from rearview.service.consolidation import Consolidator
from rearview.service.lifecycle_policy import (
    DEFAULT_DECAY,
    DEFAULT_REINFORCEMENT,
    DEFAULT_RETENTION,
    DecayPolicy,
    ReinforcementPolicy,
    RetentionPolicy,
    TenantPolicy,
    policy_for,
)
from rearview.service.ranking import (
    DEFAULT_RANKING,
    Fused,
    RankingPolicy,
    reciprocal_rank_fusion,
    rerank_score,
)
from rearview.service.rendering import render_context
from rearview.service.store_search import store_keyword_search
from rearview.text import content_hash, estimate_tokens

log = logging.getLogger(__name__)

SUMMARY_MAX_SOURCES = 200
ARCHIVED_RELEVANCE = 0.5
"""Scale of an archived (keyword-only) match's relevance: like a live memory found by one of two channels."""

_AUDIT_FIELDS = (
    "content", "type", "status", "tags", "entities", "metadata", "importance", "confidence",
    "strength", "event_time", "expires_at", "superseded_by", "version", "visibility", "session_id",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Tunables of the service; the defaults are the documented behaviour."""

    near_duplicate_threshold: float = 0.93
    """Cosine similarity at or above which a write merges into an existing memory."""
    fallback_scan_limit: int = 500
    """How many recent memories a degraded (store-only) search reads at most."""
    ranking: RankingPolicy = DEFAULT_RANKING
    retention: RetentionPolicy = DEFAULT_RETENTION
    reinforcement: ReinforcementPolicy = DEFAULT_REINFORCEMENT
    decay: DecayPolicy = DEFAULT_DECAY
    tenant_policies: Mapping[str, TenantPolicy] = field(default_factory=dict)
    """Per-tenant retention and decay; tenants not listed use `retention` and `decay`."""
    contradiction_check: bool = True
    """With a language model, ask it whether a new memory contradicts a similar one (then supersede)."""
    contradiction_min_similarity: float = 0.75
    """Cosine similarity from which an existing memory is a contradiction candidate."""
    contradiction_candidates: int = 3
    """How many of the most similar memories the model judges per write, at most."""

    def policy(self, tenant_id: str) -> TenantPolicy:
        """The retention and decay `tenant_id` lives by."""
        return policy_for(tenant_id, self.tenant_policies, self.retention, self.decay)


@dataclass(slots=True)
class _Plan:
    """The records one write will commit, and what to tell the caller."""

    writes: list[StoreWrite] = field(default_factory=list)
    index_docs: list[IndexDocument] = field(default_factory=list)


def scope_key(memory_type: MemoryType, visibility: Visibility, agent_id: str, session_id: str | None) -> str:
    """The dedup scope: shared memories dedup across agents, private ones per agent, working per session."""
    owner = agent_id if visibility is Visibility.PRIVATE else "*"
    session = session_id or "-" if memory_type is MemoryType.WORKING else "*"
    return f"{memory_type.value}/{visibility.value}/{owner}/{session}"


def snapshot(memory: Memory | None) -> dict[str, object] | None:
    """The audited fields of a memory, JSON-ready, for history before/after."""
    if memory is None:
        return None
    return memory.model_dump(mode="json", include=set(_AUDIT_FIELDS))


class MemoryService:
    """Write, search, get, update, forget, restore, history, stats and summarize memories (per tenant).

    `archive` is where archived bodies live (restore and hard forget need it; without one,
    restoring is an `ArchiveError`). `consolidator` makes summaries abstractive and judges
    contradictions when it has a language model; by default it is extractive only.
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
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock or SystemClock()
        self.config = config or ServiceConfig()
        self.archive = archive
        self.consolidator = consolidator or Consolidator()

    # ----------------------------------------------------------------------------------- write

    def write(self, tenant_id: str, req: WriteRequest) -> WriteResult:
        """Store one memory, or merge it into an exact/near duplicate in the same scope.

        With `supersedes`, the named active memory is retired (kept, `superseded_by` set) in the
        same atomic commit. With `idempotency_key`, a repeated call returns the first result.
        With a language model (and `contradiction_check`), a similar active memory in the scope
        that the model judges contradicted is retired the same way (never by a consolidation).
        """
        content = validation.check_content(req.content)
        req = req.model_copy(
            update={
                "content": content,
                "tags": validation.check_labels(req.tags, "tags"),
                "entities": validation.check_labels(req.entities, "entities"),
                "metadata": validation.check_metadata(req.metadata),
                "ttl_days": validation.check_ttl_days(req.ttl_days),
            }
        )
        replay = self._replay(tenant_id, req.idempotency_key)
        if replay is not None:
            return replay
        retired = self._supersede_target(tenant_id, req.supersedes)
        now = self.clock.now()
        key = scope_key(req.type, req.visibility, req.agent_id, req.session_id)
        digest = content_hash(content)
        vector = self._embed_document(content)

        duplicate, similarity = self._find_duplicate(tenant_id, key, digest, vector, exclude=req.supersedes)
        reason = None
        judge = retired is None and not req.derived_from  # a consolidation never retires its sources
        if judge and duplicate is not None and (similarity or 0.0) < 1.0:
            reason = self._contradiction(content, duplicate)
            if reason is not None:  # similar wording, opposite meaning: supersede instead of merging
                retired, duplicate = duplicate, None
        if duplicate is not None:
            return self._merge(tenant_id, duplicate, req, similarity, retired, now)
        if judge and retired is None and vector is not None:
            retired, reason = self._find_contradicted(tenant_id, key, content, vector)
        memory = self._new_memory(tenant_id, req, key, digest, now)
        plan = _Plan()
        plan.writes.append(StoreWrite(memory, self._event(memory, HistoryAction.CREATED, None, now), None))
        plan.index_docs.append(
            IndexDocument(memory, vector) if vector is not None else IndexDocument(memory, None)
        )
        superseded = self._plan_supersede(plan, retired, memory.id, now, req.agent_id, reason)
        try:
            self.store.commit(plan.writes)
        except ConflictError:
            # A concurrent retry with the same idempotency key won the race: answer as it did.
            replay = self._replay(tenant_id, req.idempotency_key)
            if replay is None:
                raise
            return replay
        indexed = vector is not None and self._index(plan.index_docs)
        action = WriteAction.SUPERSEDED if superseded else WriteAction.CREATED
        return WriteResult(action=action, memory=memory.view(), superseded_ids=superseded, indexed=indexed)

    def _replay(self, tenant_id: str, idempotency_key: str | None) -> WriteResult | None:
        """The result of the first write made with this idempotency key, if there was one."""
        if not idempotency_key:
            return None
        first = self.store.find_by_idempotency_key(tenant_id, idempotency_key)
        if first is None:
            return None
        return WriteResult(action=WriteAction.CREATED, memory=first.view(), idempotent_replay=True)

    def _new_memory(self, tenant_id: str, req: WriteRequest, key: str, digest: str, now: datetime) -> Memory:
        return Memory(
            id=new_id(now),
            tenant_id=tenant_id,
            type=req.type,
            content=req.content,
            agent_id=req.agent_id,
            session_id=req.session_id,
            visibility=req.visibility,
            tags=req.tags,
            entities=req.entities,
            metadata=req.metadata,
            importance=req.importance,
            confidence=req.confidence,
            strength=self.config.reinforcement.initial_strength,
            created_at=now,
            updated_at=now,
            last_accessed_at=now,
            event_time=req.event_time or now,
            expires_at=self.config.policy(tenant_id).retention.expires_at(
                req.type, req.importance, req.ttl_days, now
            ),
            content_hash=digest,
            scope_key=key,
            idempotency_key=req.idempotency_key,
            derived_from=req.derived_from,
            embedding_model=self.embedder.model_id,
        )

    def _supersede_target(self, tenant_id: str, memory_id: str | None) -> Memory | None:
        if memory_id is None:
            return None
        target = self.store.get(tenant_id, validation.check_id(memory_id, "supersedes"))
        if target is None:
            raise InvalidInputError("supersedes", f"memory `{memory_id}` not found")
        if target.status is not MemoryStatus.ACTIVE:
            raise InvalidInputError(
                "supersedes", f"memory `{memory_id}` is {target.status.value}, not active"
            )
        return target

    def _plan_supersede(
        self,
        plan: _Plan,
        retired: Memory | None,
        successor_id: str,
        now: datetime,
        actor: str,
        reason: str | None = None,
    ) -> list[str]:
        if retired is None:
            return []
        after = retired.model_copy(
            update={
                "status": MemoryStatus.SUPERSEDED,
                "superseded_by": successor_id,
                "updated_at": now,
                "version": retired.version + 1,
            }
        )
        note = f"superseded by {successor_id}" + (f" ({reason})" if reason else "")
        event = self._event(after, HistoryAction.SUPERSEDED, retired, now, actor, note=note)
        plan.writes.append(StoreWrite(after, event, retired.version))
        plan.index_docs.append(IndexDocument(after, None))
        return [retired.id]

    def _find_duplicate(
        self, tenant_id: str, key: str, digest: str, vector: Vector | None, exclude: str | None
    ) -> tuple[Memory | None, float | None]:
        exact = self.store.find_by_hash(tenant_id, key, digest)
        if exact is not None and exact.id != exclude:
            return exact, 1.0
        if vector is None:
            return None, None
        try:
            hits = self.index.search(
                IndexQuery(tenant_id=tenant_id, filter=MemoryFilter(scope_key=key), limit=2, vector=vector)
            )
        except IndexUnavailableError:
            log.warning("near-duplicate check skipped: index unavailable")
            return None, None
        for memory_id, similarity in hits.vector:
            if memory_id != exclude and similarity >= self.config.near_duplicate_threshold:
                candidate = self.store.get(tenant_id, memory_id)
                if candidate is not None and candidate.status is MemoryStatus.ACTIVE:
                    return candidate, similarity
        return None, None

    def _contradiction(self, content: str, older: Memory) -> str | None:
        """Why `content` contradicts `older` according to the language model, or None."""
        if not self.config.contradiction_check or not self.consolidator.can_judge:
            return None
        verdict = self.consolidator.judge(content, older)
        if verdict is None or not verdict.contradicts:
            return None
        return f"contradiction judged by {verdict.model_id}: {verdict.reason}"

    def _find_contradicted(
        self, tenant_id: str, key: str, content: str, vector: Vector
    ) -> tuple[Memory | None, str | None]:
        """The most similar active memory in the scope that `content` contradicts, if a model says so."""
        if not self.config.contradiction_check or not self.consolidator.can_judge:
            return None, None
        try:
            hits = self.index.search(
                IndexQuery(
                    tenant_id=tenant_id,
                    filter=MemoryFilter(scope_key=key),
                    limit=self.config.contradiction_candidates,
                    vector=vector,
                )
            )
        except IndexUnavailableError:
            return None, None
        for memory_id, similarity in hits.vector:
            if similarity < self.config.contradiction_min_similarity:
                break
            candidate = self.store.get(tenant_id, memory_id)
            if candidate is not None and candidate.status is MemoryStatus.ACTIVE:
                reason = self._contradiction(content, candidate)
                if reason is not None:
                    return candidate, reason
        return None, None

    def _merge(
        self,
        tenant_id: str,
        existing: Memory,
        req: WriteRequest,
        similarity: float | None,
        retired: Memory | None,
        now: datetime,
    ) -> WriteResult:
        importance = max(existing.importance, req.importance)
        merged = existing.model_copy(
            update={
                "strength": self.config.reinforcement.reinforced(
                    existing.strength, self.config.reinforcement.merge_boost
                ),
                "importance": importance,
                "confidence": max(existing.confidence, req.confidence),
                "tags": list(dict.fromkeys([*existing.tags, *req.tags])),
                "entities": list(dict.fromkeys([*existing.entities, *req.entities])),
                "metadata": {**existing.metadata, **req.metadata},
                "updated_at": now,
                "last_accessed_at": now,
                "expires_at": _later(
                    existing.expires_at,
                    self.config.policy(tenant_id).retention.expires_at(
                        existing.type, importance, req.ttl_days, now
                    ),
                ),
                "version": existing.version + 1,
            }
        )
        note = f"merged duplicate (similarity {similarity:.3f}): {req.content}"
        plan = _Plan()
        plan.writes.append(
            StoreWrite(
                merged,
                self._event(merged, HistoryAction.MERGED, existing, now, req.agent_id, note),
                existing.version,
            )
        )
        plan.index_docs.append(IndexDocument(merged, None))
        superseded = self._plan_supersede(plan, retired, merged.id, now, req.agent_id)
        self.store.commit(plan.writes)
        indexed = self._index(plan.index_docs)
        return WriteResult(
            action=WriteAction.SUPERSEDED if superseded else WriteAction.MERGED,
            memory=merged.view(),
            merged_into=merged.id,
            similarity=similarity,
            superseded_ids=superseded,
            indexed=indexed,
        )

    # ---------------------------------------------------------------------------------- search

    def search(self, tenant_id: str, req: SearchRequest) -> SearchResult:
        """Hybrid recall: BM25 + k-NN inside the filter, RRF, then importance/recency/strength re-rank.

        Never fails because the index or embedder is down: it answers from what still works and
        sets `degraded`. Returned memories are reinforced unless `reinforce` is false.

        With `archived` among the filter's statuses (`include_archived`), archived memories are
        matched too, from what the store keeps of them: BM25 over the previews of the newest
        `fallback_scan_limit` archived stubs in the filter. A keyword-only match, an archived hit's
        relevance is scaled by `ARCHIVED_RELEVANCE` (what a live memory found by one of two
        channels gets); it carries its preview as content and is not reinforced.
        """
        query = req.query.strip()
        if not query:
            raise InvalidInputError("query", "must not be empty")
        top_k = validation.check_top_k(req.top_k)
        if req.min_score < 0:
            raise InvalidInputError("min_score", f"must be >= 0 (got {req.min_score})")
        depth = max(self.config.ranking.candidates_per_channel, 2 * top_k)
        reasons: list[str] = []
        live = tuple(s for s in req.filter.statuses if s is not MemoryStatus.ARCHIVED)
        k = self.config.ranking.rrf_k
        fused: list[Fused] = []
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
        ranked, stored = self._rank(tenant_id, fused, req.filter)
        results = [h for h in ranked if h.score >= req.min_score][:top_k]
        if req.reinforce and results:
            results = self._reinforce(tenant_id, results, stored)
        context = render_context(results)
        return SearchResult(
            query=query,
            results=results,
            context=context,
            token_estimate=estimate_tokens(context),
            degraded=bool(reasons),
            degraded_reason="; ".join(reasons) or None,
        )

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

    def _rank(
        self, tenant_id: str, fused: Sequence[Fused], filter: MemoryFilter
    ) -> tuple[list[SearchHit], dict[str, Memory]]:
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
            hits.append(_hit(memory, score, f.relevance, f.keyword_rank, f.vector_rank))
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits, by_id

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

    # ---------------------------------------------------------------------- get/update/forget

    def get(self, tenant_id: str, memory_id: str) -> MemoryView:
        """The memory (any status; an archived one as its stub), or NotFoundError."""
        memory = self.store.get(tenant_id, validation.check_id(memory_id))
        if memory is None:
            raise NotFoundError(memory_id)
        return self._present(memory)

    def _present(self, memory: Memory) -> MemoryView:
        """The memory as the API shows it: strength decayed to now."""
        strength = self.config.policy(memory.tenant_id).decay.effective(memory, self.clock.now())
        return memory.model_copy(update={"strength": strength}).view()

    def update(self, tenant_id: str, req: UpdateRequest) -> MemoryView:
        """A new version of an active memory; re-embedded and re-indexed when the content changes.

        `expected_version` (optional) guards against lost updates: a mismatch is a ConflictError.
        """
        current = self.store.get(tenant_id, validation.check_id(req.memory_id))
        if current is None:
            raise NotFoundError(req.memory_id)
        if current.status is not MemoryStatus.ACTIVE:
            raise InvalidInputError(
                "memory_id", f"memory is {current.status.value}; only active memories can be updated"
            )
        if req.expected_version is not None and req.expected_version != current.version:
            raise ConflictError(current.id, req.expected_version, current.version)
        changes = self._update_changes(tenant_id, current, req)
        content_changed = "content" in changes
        vector = self._embed_document(str(changes["content"])) if content_changed else None
        updated = current.model_copy(
            update={**changes, "updated_at": self.clock.now(), "version": current.version + 1}
        )
        event = self._event(updated, HistoryAction.UPDATED, current, updated.updated_at, req.agent_id)
        self.store.commit([StoreWrite(updated, event, current.version)])
        if content_changed and vector is None:
            self._drop_from_index(tenant_id, [updated.id])  # stale vector must not answer for new content
        else:
            self._index([IndexDocument(updated, vector)])
        return self._present(updated)

    def _update_changes(self, tenant_id: str, current: Memory, req: UpdateRequest) -> dict[str, object]:
        changes: dict[str, object] = {}
        if req.content is not None and req.content.strip() != current.content:
            content = validation.check_content(req.content)
            changes.update(content=content, content_hash=content_hash(content))
        if req.tags is not None:
            changes["tags"] = validation.check_labels(req.tags, "tags")
        if req.entities is not None:
            changes["entities"] = validation.check_labels(req.entities, "entities")
        if req.metadata is not None:
            changes["metadata"] = validation.check_metadata(req.metadata)
        for name in ("importance", "confidence", "event_time"):
            if getattr(req, name) is not None:
                changes[name] = getattr(req, name)
        if req.ttl_days is not None or req.importance is not None:
            importance = req.importance or current.importance
            ttl = validation.check_ttl_days(req.ttl_days)
            changes["expires_at"] = self.config.policy(tenant_id).retention.expires_at(
                current.type, importance, ttl, self.clock.now()
            )
        if not changes:
            raise InvalidInputError("memory_update", "nothing to change: give at least one field to update")
        return changes

    def forget(self, tenant_id: str, req: ForgetRequest) -> ForgetResult:
        """Soft (status `deleted`, history kept) or hard (store, index and archive purged) deletion.

        By ids (all must exist, else NotFoundError and nothing changes) or by a filter with at
        least one criterion (archived memories included); a filter forgets at most
        `MAX_FORGET_BATCH` per call (`more` says so). A hard forget erases the memory from every
        archive object it was ever written to before purging the store, so a failed one can be
        repeated until it completes.
        """
        targets, more = self._forget_targets(tenant_id, req)
        now = self.clock.now()
        if req.hard:
            for memory in targets:
                self._erase_archived(tenant_id, memory)
                self.store.purge(tenant_id, memory.id)
        else:
            writes = []
            for memory in targets:
                after = memory.model_copy(
                    update={"status": MemoryStatus.DELETED, "updated_at": now, "version": memory.version + 1}
                )
                writes.append(
                    StoreWrite(
                        after,
                        self._event(after, HistoryAction.FORGOTTEN, memory, now, req.agent_id),
                        memory.version,
                    )
                )
            for start in range(0, len(writes), 25):
                self.store.commit(writes[start : start + 25])
        self._drop_from_index(tenant_id, [m.id for m in targets])
        return ForgetResult(forgotten=[m.id for m in targets], hard=req.hard, more=more)

    def _forget_targets(self, tenant_id: str, req: ForgetRequest) -> tuple[list[Memory], bool]:
        if req.ids:
            ids = [validation.check_id(i, "ids") for i in dict.fromkeys(req.ids)]
            found = {m.id: m for m in self.store.get_many(tenant_id, ids)}
            missing = [i for i in ids if i not in found]
            if missing:
                raise NotFoundError(missing[0])
            return [found[i] for i in ids if req.hard or found[i].status is not MemoryStatus.DELETED], False
        flt = req.filter
        if flt is None or not any((flt.session_id, flt.types, flt.tags, flt.time_from, flt.time_to)):
            raise InvalidInputError(
                "filter", "give `ids`, or at least one of session_id, types, tags, time_from, time_to"
            )
        statuses = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.ARCHIVED) + (
            (MemoryStatus.DELETED,) if req.hard else ()
        )
        page = self.store.list(
            tenant_id, flt.model_copy(update={"statuses": statuses}), limit=MAX_FORGET_BATCH
        )
        return page.items, page.cursor is not None

    def _erase_archived(self, tenant_id: str, memory: Memory) -> None:
        refs = archive_refs(memory, self.store.history(tenant_id, memory.id))
        if refs and self.archive is None:
            raise ArchiveError(f"memory {memory.id} has archived copies but no archive is configured")
        for ref in refs:
            self._require_archive().delete(tenant_id, ref, memory.id)

    # ------------------------------------------------------------------------------- restore

    def restore(self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT) -> RestoreResult:
        """Bring an archived memory back from the archive: full content, re-embedded, re-indexed.

        It returns with the status it had when archived (active or superseded), a fresh retention
        counted from now, its strength reinforced as by a recall, and its history intact (plus a
        `restored` event); the archived copy is then removed. NotFoundError if there is no such
        memory, InvalidInputError if it is not archived, ArchiveError if the archive fails (and
        then nothing changed).
        """
        stub = self.store.get(tenant_id, validation.check_id(memory_id))
        if stub is None:
            raise NotFoundError(memory_id)
        if stub.status is not MemoryStatus.ARCHIVED or stub.archive_ref is None:
            raise InvalidInputError(
                "memory_id", f"memory is {stub.status.value}; only archived memories can be restored"
            )
        ref = stub.archive_ref
        full, _ = self._require_archive().get(tenant_id, ref, stub.id)
        now = self.clock.now()
        restored = full.model_copy(
            update={
                "status": full.status if full.status in ARCHIVABLE_STATUSES else MemoryStatus.ACTIVE,
                "archive_ref": None,
                "version": stub.version + 1,
                "updated_at": now,
                "last_accessed_at": now,
                "strength": self.config.reinforcement.reinforced(
                    full.strength, self.config.reinforcement.recall_boost
                ),
                "expires_at": self.config.policy(tenant_id).retention.expires_at(
                    full.type, full.importance, None, now
                ),
            }
        )
        event = self._event(
            restored, HistoryAction.RESTORED, stub, now, agent_id, note=f"restored from {ref}"
        )
        self.store.commit([StoreWrite(restored, event, stub.version)])
        vector = self._embed_document(restored.content)
        indexed = vector is not None and self._index([IndexDocument(restored, vector)])
        try:
            self._require_archive().delete(tenant_id, ref, stub.id)
        except ArchiveError as exc:  # the copy stays findable through history: a hard forget erases it
            log.warning("restored %s but could not remove its archived copy: %s", stub.id, exc)
        return RestoreResult(memory=self._present(restored), restored_from=ref, indexed=indexed)

    def _require_archive(self) -> Archive:
        if self.archive is None:
            raise ArchiveError("no archive is configured (settings.archive)")
        return self.archive

    # ------------------------------------------------------------------------- history/stats

    def history(self, tenant_id: str, memory_id: str) -> HistoryResult:
        """The memory's events, oldest first: why the agent believes what it believes."""
        memory = self.store.get(tenant_id, validation.check_id(memory_id))
        events = self.store.history(tenant_id, memory_id)
        if memory is None and not events:
            raise NotFoundError(memory_id)
        view = self._present(memory) if memory else None
        return HistoryResult(memory_id=memory_id, memory=view, events=events)

    def stats(self, tenant_id: str) -> Stats:
        """Counts by type and status, the embedding model, and the index's document count if reachable."""
        base = self.store.stats(tenant_id)
        try:
            indexed: int | None = self.index.count(tenant_id)
        except IndexUnavailableError:
            indexed = None
        return Stats(**base.model_dump(), embedding_model=self.embedder.model_id, index_documents=indexed)

    def summarize(
        self,
        tenant_id: str,
        session_id: str | None = None,
        time_from: datetime | None = None,
        time_to: datetime | None = None,
        summary_type: MemoryType = MemoryType.EPISODIC,
        agent_id: str = DEFAULT_AGENT,
    ) -> WriteResult:
        """Consolidate a session's (or time range's) working and episodic memories into one memory.

        Abstractive when the consolidator has a language model, else extractive (the sources' own
        statements); `metadata.summary_method` says which. The new memory's `derived_from` links
        the sources, which stay as they are.
        """
        if session_id is None and time_from is None and time_to is None:
            raise InvalidInputError("session_id", "give a session_id or a time range (time_from/time_to)")
        flt = MemoryFilter(
            agent_id=agent_id, session_id=session_id, time_from=time_from, time_to=time_to,
            types=(MemoryType.WORKING, MemoryType.EPISODIC),
        )  # fmt: skip
        sources = self.store.list(tenant_id, flt, limit=SUMMARY_MAX_SOURCES).items
        if not sources:
            raise InvalidInputError(
                "session_id", "no working or episodic memories match: nothing to summarize"
            )
        try:
            vectors = self.embedder.embed_documents([m.content for m in sources])
        except EmbedderError:
            vectors = np.ones((len(sources), 1), dtype=np.float32)
        label = f"session {session_id}" if session_id else "time range"
        summary = self.consolidator.summarize(sources, vectors, label)
        metadata: dict[str, MetadataValue] = {"summary_method": summary.method}
        if summary.model_id:
            metadata["summary_model"] = summary.model_id
        req = WriteRequest(
            content=summary.content,
            metadata=metadata,
            type=summary_type,
            agent_id=agent_id,
            session_id=session_id if summary_type is MemoryType.WORKING else None,
            tags=list(dict.fromkeys(t for m in sources for t in m.tags))[:MAX_TAGS],
            importance=max(m.importance for m in sources),
            event_time=max(m.event_time for m in sources),
            derived_from=[m.id for m in sources],
        )
        return self.write(tenant_id, req)

    # ------------------------------------------------------------------------------ helpers

    def _embed_document(self, content: str) -> Vector | None:
        try:
            vector: Vector = self.embedder.embed_documents([content])[0]
            return vector
        except EmbedderError as exc:
            log.warning("embedding failed, memory stored unindexed: %s", exc)
            return None

    def _index(self, docs: Sequence[IndexDocument]) -> bool:
        try:
            self.index.upsert(docs)
        except IndexUnavailableError as exc:
            log.warning("index write failed; `rearview reindex` will repair: %s", exc)
            return False
        return True

    def _drop_from_index(self, tenant_id: str, ids: Sequence[str]) -> None:
        try:
            self.index.delete(tenant_id, ids)
        except IndexUnavailableError as exc:
            log.warning("index delete failed; search re-checks the store, reindex repairs: %s", exc)

    def _event(
        self,
        memory: Memory,
        action: HistoryAction,
        before: Memory | None,
        now: datetime,
        actor: str | None = None,
        note: str | None = None,
    ) -> HistoryEvent:
        return HistoryEvent(
            id=new_id(now),
            tenant_id=memory.tenant_id,
            memory_id=memory.id,
            action=action,
            at=now,
            actor=actor or memory.agent_id,
            before=snapshot(before),
            after=snapshot(memory),
            note=note,
        )


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    """The later expiry; None (never expires) wins."""
    if a is None or b is None:
        return None
    return max(a, b)


def _hit(memory: Memory, score: float, relevance: float, kw: int | None, vec: int | None) -> SearchHit:
    return SearchHit(
        id=memory.id,
        content=memory.content,
        type=memory.type,
        score=round(score, 6),
        relevance=round(relevance, 6),
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
        keyword_rank=kw,
        vector_rank=vec,
    )
