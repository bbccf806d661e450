"""The write path: a write is first *decided*, then *applied*.

`Writer.decide` reads (the store, the index and, for contradiction checks, the language model)
and returns what the write means, a `WriteDecision`: `Merge` into a duplicate, `Supersede` an
older memory, or `Create`. It writes nothing, so it is the one place to add a rule about what a
write may do. `Writer.apply` turns the decision into one atomic store commit, then indexes it
best-effort (an index or embedder failure never loses the write; the result says `indexed`).

Deciding and applying read best together (every decision type next to the code that commits it);
the decision types, the `Draft` they are decided on and the `Changes` applied are in `decision`,
the records a write makes (a new memory, a merged one) in `records`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from rearview.errors import (
    ConflictError,
    EmbedderError,
    IndexUnavailableError,
    InvalidInputError,
    NotFoundError,
)
from rearview.models import (
    Conflicting,
    HistoryAction,
    Memory,
    MemoryFilter,
    MemoryStatus,
    Visibility,
    WriteAction,
    WriteRequest,
    WriteResult,
)
from rearview.ports import Embedder, IndexQuery, MemoryIndex, MemoryStore, StoreWrite, Vector
from rearview.service import indexing, keyword_context
from rearview.service.config import ServiceConfig
from rearview.service.history import change_event
from rearview.service.visibility import agent_idempotency_key, load_visible
from rearview.service.write.conflicts import find_conflict
from rearview.service.write.consolidation import Consolidator
from rearview.service.write.created import created_at
from rearview.service.write.decision import Changes, Create, Draft, Embedded, Merge, Supersede, WriteDecision
from rearview.service.write.duplicates import Corroboration, Match, active_in_scope, find_duplicate
from rearview.service.write.merge_safety import information_difference
from rearview.service.write.records import merged_memory, new_memory
from rearview.service.write.secrets import screen, screen_all
from rearview.service.write.stored_text import model_texts
from rearview.shared.clock import Clock
from rearview.shared.scopes import scope_key
from rearview.text import content_hash

log = logging.getLogger(__name__)


class Writer:
    """`MemoryService.write`, with the collaborators it reads and writes and the policies it applies."""

    def __init__(
        self,
        store: MemoryStore,
        index: MemoryIndex,
        embedder: Embedder,
        clock: Clock,
        config: ServiceConfig,
        consolidator: Consolidator,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.config = config
        self.consolidator = consolidator

    def write(
        self,
        tenant_id: str,
        req: WriteRequest,
        embedded: Embedded | None = None,
        *,
        judge: bool | None = None,
    ) -> WriteResult:
        """Store one memory, or merge it into an exact/near duplicate in the same scope.

        `embedded`, when given, is `req.content` (stripped) already embedded by a caller that embeds
        many writes at once with this writer's embedder; else the write embeds it.

        With `supersedes`, the named active memory (one `req.agent_id` may see) is retired (kept,
        `superseded_by` set) in the same atomic commit. With `idempotency_key`, a repeated call by
        the same agent returns the first result (keys are per agent: `visibility`).
        With a language model (and `contradiction_check`), a similar active memory in the scope
        that the model judges contradicted is retired the same way (never by a consolidation).
        `judge` overrides who is judged (`decide`): True for a fact an ingest extracted from the
        messages in `derived_from` (judged like any statement), False for a message's own record.
        Every check runs before anything is written; a text field (content, tags, metadata, ...:
        `stored_text`) that looks like a credential is refused, or stored with `warnings`, as
        `config.secrets` says (`screen_all`).
        """
        notes = self.screen_all(model_texts(req))
        result = self._write(tenant_id, with_stored_key(req), embedded, judge)
        return result.model_copy(update={"warnings": notes}) if notes else result

    def _write(
        self, tenant_id: str, req: WriteRequest, embedded: Embedded | None, judge: bool | None
    ) -> WriteResult:
        replay = self.replay(tenant_id, req.idempotency_key)
        if replay is not None:
            return replay
        target = self.supersede_target(tenant_id, req)
        draft = self.draft(req, embedded)
        decision = self.decide(tenant_id, draft, target, judge=judge)
        plain = isinstance(decision, Create) and decision.corroborates is None
        if plain and target is None and not req.derived_from:
            retired = self.retired_copy(tenant_id, draft)
            if retired is not None:
                return WriteResult(
                    action=WriteAction.RETIRED, memory=retired.view(), superseded_by=retired.superseded_by
                )
        if isinstance(decision, Create) and target is None and not req.derived_from and judge is not False:
            conflict = find_conflict(
                self.store, self.index, tenant_id, draft, self.config.conflict_min_similarity
            )
            decision = replace(decision, conflict=conflict)
        return self.apply(tenant_id, draft, decision)

    def screen(self, content: str, field: str) -> str | None:
        """The one check of content for credentials (`secrets.screen` under `config.secrets`).

        Every path that stores new text calls it before writing: a write, each ingested message, an
        update's new content, a restored record. `InvalidInputError` on `field` when refused; the
        warning to report when the policy is `warn`; else None.
        """
        return screen(content, field, self.config.secrets)

    def screen_all(self, texts: Iterable[tuple[str, str]]) -> list[str]:
        """`screen` each `(field, text)` (`stored_text`): raises for the first refused; the warnings."""
        return screen_all(texts, self.config.secrets)

    def retired_copy(self, tenant_id: str, draft: Draft) -> Memory | None:
        """A superseded memory of the draft's scope with exactly its content, if the index knows one.

        A write that repeats a corrected fact is an agent replaying stale notes, not news: it stays
        retired (`WriteAction.RETIRED`) unless the write names the correction in `supersedes`.
        Found through the index's vector channel (its nearest superseded neighbours, confirmed by
        content hash in the store): stores keep a hash lookup for active memories only. Best-effort:
        without a vector or an index, the write is created as before.
        """
        if draft.vector is None:
            return None
        flt = MemoryFilter(scope_key=draft.scope_key, statuses=(MemoryStatus.SUPERSEDED,))
        try:
            hits = self.index.search(
                IndexQuery(tenant_id=tenant_id, filter=flt, limit=3, vector=draft.vector, match_cues=False)
            )
        except IndexUnavailableError:
            return None
        near = [
            memory_id
            for memory_id, similarity in hits.vector
            if similarity >= self.config.near_duplicate_threshold
        ]
        for memory in self.store.get_many(tenant_id, near):
            if memory.status is MemoryStatus.SUPERSEDED and memory.content_hash == draft.digest:
                return memory
        return None

    def draft(self, req: WriteRequest, embedded: Embedded | None = None) -> Draft:
        """The draft of an already validated request, stamped now and embedded (best-effort).

        `embedded` is the caller's embedding of `req.content` (see `write`).
        """
        vectors = self._embedding(req, embedded)
        now = self.clock.now()
        return Draft(
            req=req,
            now=now,
            scope_key=scope_key(req.type, req.visibility, req.agent_id, req.session_id),
            digest=content_hash(req.content),
            vector=vectors.vector if vectors else None,
            cue_vectors=vectors.cues if vectors else None,
            part_vectors=vectors.parts if vectors else None,
            born=created_at(req, now),
        )

    def _embedding(self, req: WriteRequest, embedded: Embedded | None) -> indexing.Embedding | None:
        """The request's content, cues and parts embedded (None: the embedder failed, stored unindexed).

        A caller's embedding of the content and its parts (`embedded`) is kept, and only the cues are
        embedded here; a caller's failed one is not tried again.
        """
        try:
            if embedded is None:
                view = indexing.view_weight(req.session_id, self.config.query_view)
                return indexing.embed_texts(self.embedder, [(req.content, req.cues)], views=[view])[0]
            if embedded.vector is None:
                return None
            cues = self.embedder.embed_documents(req.cues) if req.cues else None
            return indexing.Embedding(embedded.vector, cues, embedded.parts)
        except EmbedderError as exc:
            log.warning("embedding failed, memory stored unindexed: %s", exc)
            return None

    # ------------------------------------------------------------------------------ decide

    def decide(
        self, tenant_id: str, draft: Draft, target: Memory | None, *, judge: bool | None = None
    ) -> WriteDecision:
        """What the write means; reads only. `target` is the caller's (checked) `supersedes` memory.

        In order: an exact or near duplicate in the scope (neither `target` nor one of a
        consolidation's own sources; the writer's own preferred: `duplicates`) is merged into when
        the writer wrote it, else corroborated (a new memory of the writer's, linked to it), unless
        the language model judges that the
        write contradicts it (then it is superseded) or the two texts differ in a fact a merge
        would drop (a number, date, version, identifier, name or negation: then a new memory is
        created and linked to it; only the writer's `supersedes` or a judged contradiction may
        retire a memory, never a heuristic); else `target`, if any, is superseded; else
        the most similar active memory the model judges contradicted is superseded; else a new
        memory is created. Contradictions are judged only for writes that
        name no `supersedes` and are not consolidations (`derived_from`): a summary never
        retires its sources. `judge` overrides the second condition: True judges a write with
        `derived_from` (a fact extracted from messages, not a summary of them), False never judges
        (an ingested message: what someone said stays true as a record when its content changes).
        """
        req = draft.req
        judge = target is None and (not req.derived_from if judge is None else judge)
        # A consolidation never merges into one of its sources: the summary would vanish into it.
        excluded = frozenset(req.derived_from) | ({req.supersedes} if req.supersedes else set())
        duplicate = find_duplicate(
            self.store, self.index, self.config.near_duplicate_threshold, tenant_id, draft, excluded
        )
        if duplicate is not None:
            return self._on_duplicate(duplicate, req.content, target, judge)
        if target is not None:
            return Supersede(target)
        if judge and draft.vector is not None:
            return self._find_contradicted(tenant_id, draft, draft.vector) or Create()
        return Create()

    def _on_duplicate(
        self, duplicate: Match, content: str, target: Memory | None, judge: bool
    ) -> WriteDecision:
        """What a write with a duplicate in its scope means (`decide`)."""
        if not duplicate.exact:  # a near duplicate, even at cosine 1.0: its text is not the write's
            reason = self._contradiction(content, duplicate.memory) if judge else None
            if reason is not None:  # similar wording, opposite meaning: supersede instead of merging
                return Supersede(duplicate.memory, reason)
            difference = information_difference(duplicate.memory.content, content)
            if difference is not None:  # a merge would drop a fact: keep both, linked
                return Supersede(target) if target else Create(duplicate.memory, difference.describe())
        if duplicate.own:
            return Merge(duplicate.memory, duplicate.similarity, retires=target)
        # Another agent's: the writer keeps a claim of its own, linked to it (`duplicates`).
        corroborates = Corroboration(duplicate.memory, duplicate.similarity)
        return Supersede(target, corroborates=corroborates) if target else Create(corroborates=corroborates)

    def supersede_target(self, tenant_id: str, req: WriteRequest) -> Memory | None:
        """The active memory `req.supersedes` names, if `req` may retire it (InvalidInputError otherwise).

        A private write may not retire a shared memory: the other agents would lose the fact
        without ever seeing its correction.
        """
        memory_id = req.supersedes
        if memory_id is None:
            return None
        try:
            target = load_visible(self.store, tenant_id, memory_id, req.agent_id, "supersedes")
        except NotFoundError as exc:
            raise InvalidInputError("supersedes", f"memory `{memory_id}` not found") from exc
        if target.status is not MemoryStatus.ACTIVE:
            raise InvalidInputError(
                "supersedes", f"memory `{memory_id}` is {target.status.value}, not active"
            )
        if req.visibility is Visibility.PRIVATE and target.visibility is Visibility.SHARED:
            raise InvalidInputError(
                "supersedes", f"memory `{memory_id}` is shared: write its correction as shared, not private"
            )
        return target

    def _contradiction(self, content: str, older: Memory) -> str | None:
        """Why `content` contradicts `older` according to the language model, or None."""
        if not self.config.contradiction_check or not self.consolidator.can_judge:
            return None
        verdict = self.consolidator.judge(content, older)
        if verdict is None or not verdict.contradicts:
            return None
        return f"contradiction judged by {verdict.model_id}: {verdict.reason}"

    def _find_contradicted(self, tenant_id: str, draft: Draft, vector: Vector) -> Supersede | None:
        """The most similar active memory in the scope that the write contradicts, if a model says so."""
        if not self.config.contradiction_check or not self.consolidator.can_judge:
            return None
        query = IndexQuery(
            tenant_id=tenant_id, filter=MemoryFilter(scope_key=draft.scope_key),
            limit=self.config.contradiction_candidates, vector=vector, match_cues=False,
        )  # fmt: skip
        try:
            hits = self.index.search(query)
        except IndexUnavailableError:
            return None
        for memory_id, similarity in hits.vector:
            if similarity < self.config.contradiction_min_similarity:
                break
            candidate = self.store.get(tenant_id, memory_id)
            if active_in_scope(candidate, draft):
                reason = self._contradiction(draft.req.content, candidate)
                if reason is not None:
                    return Supersede(candidate, reason)
        return None

    # ------------------------------------------------------------------------------- apply

    def apply(self, tenant_id: str, draft: Draft, decision: WriteDecision) -> WriteResult:
        """Commit the decided write atomically (all of its records or none), then index it best-effort."""
        match decision:
            case Merge():
                return self._merge(tenant_id, draft, decision)
            case Supersede() | Create():
                return self._create(tenant_id, draft, decision)

    def _create(self, tenant_id: str, draft: Draft, decision: Supersede | Create) -> WriteResult:
        changes, result = self.creation(tenant_id, draft, decision)
        try:
            self.store.commit(changes.writes)
        except ConflictError:
            # A concurrent retry with the same idempotency key won the race: answer as it did.
            replay = self.replay(tenant_id, draft.req.idempotency_key)
            if replay is not None:
                return replay
            if not changes.contests:
                raise
            # The contested memory changed meanwhile: the write stands, still naming it; no mark.
            changes.writes = [w for w in changes.writes if w not in changes.contests]
            self.store.commit(changes.writes)
        indexed = draft.vector is not None and indexing.upsert(
            self.index,
            keyword_context.documents_with_context(
                self.store, tenant_id, changes.index_docs, keyword_context.WRITE_WINDOW, {result.memory.id}
            ),
        )
        return result.model_copy(update={"indexed": indexed})

    def creation(
        self, tenant_id: str, draft: Draft, decision: Supersede | Create
    ) -> tuple[Changes, WriteResult]:
        """What creating the draft's memory commits, and its result (`indexed`: whether it has a vector).

        Writes nothing: `_create` commits and indexes the changes, `WriteBatch` gathers several.
        """
        req, now = draft.req, draft.now
        memory = new_memory(tenant_id, draft, self.config, self.embedder.model_id)
        changes = Changes()
        linked = decision if isinstance(decision, Create) and decision.differs_from else Create()
        related_id = linked.differs_from.id if linked.differs_from else None
        notes = [f"not merged into {related_id}: {linked.difference}"] if related_id else []
        corroborated = decision.corroborates
        if corroborated is not None:
            other = corroborated.memory
            similarity = f"similarity {corroborated.similarity:.3f}"
            notes.append(f"corroborates {other.id} by agent {other.agent_id} ({similarity})")
        if isinstance(decision, Supersede):  # the successor's history names what it retired, too
            why = f" ({decision.reason})" if decision.reason else ""
            notes.append(f"supersedes {decision.retired.id}{why}")
        note = "; ".join(notes) or None
        changes.put(
            StoreWrite(memory, change_event(memory, HistoryAction.CREATED, None, now, note=note), None),
            draft.vector,
            draft.cue_vectors if draft.vector is not None else None,
            draft.part_vectors if draft.vector is not None else None,
        )
        if isinstance(decision, Supersede):
            changes.retire(decision.retired, memory.id, now, req.agent_id, decision.reason)
        conflict = decision.conflict if isinstance(decision, Create) else None
        if conflict is not None and conflict.memory.agent_id == req.agent_id:  # another's: named, not changed
            # The note names the kind only: the newer's values stay out of the older's history (erasure).
            changes.contest(
                conflict.memory, memory.id, now, req.agent_id, f"{conflict.difference.kind} differs"
            )
        action = WriteAction.CORROBORATED if corroborated else WriteAction.CREATED
        result = WriteResult(
            action=WriteAction.SUPERSEDED if changes.superseded_ids else action,
            memory=memory.view(),
            similarity=corroborated.similarity if corroborated else None,
            corroborates=corroborated.memory.id if corroborated else None,
            superseded_ids=changes.superseded_ids,
            indexed=draft.vector is not None,
            related_id=related_id,
            not_merged_because=linked.difference,
            conflicts=[]
            if conflict is None
            else [
                Conflicting(
                    id=conflict.memory.id,
                    content=conflict.memory.content,
                    written_at=conflict.memory.created_at,
                )
            ],
        )
        return changes, result

    def _merge(self, tenant_id: str, draft: Draft, decision: Merge) -> WriteResult:
        req, now, existing = draft.req, draft.now, decision.into
        merged = merged_memory(tenant_id, existing, req, now, self.config).model_copy(
            update={"scope_key": draft.scope_key}
        )
        note = f"merged duplicate (similarity {decision.similarity:.3f}): {req.content}"
        event = change_event(merged, HistoryAction.MERGED, existing, now, req.agent_id, note)
        changes = Changes()
        changes.put(StoreWrite(merged, event, existing.version), None, self._cue_vectors(merged, existing))
        if decision.retires is not None:
            changes.retire(decision.retires, merged.id, now, req.agent_id, None)
        self.store.commit(changes.writes)
        indexed = indexing.upsert(self.index, changes.index_docs)
        return WriteResult(
            action=WriteAction.SUPERSEDED if changes.superseded_ids else WriteAction.MERGED,
            memory=merged.view(),
            merged_into=merged.id,
            similarity=decision.similarity,
            superseded_ids=changes.superseded_ids,
            indexed=indexed,
        )

    def _cue_vectors(self, merged: Memory, existing: Memory) -> Vector | None:
        """The merged memory's cue vectors when the merge added cues (None: the indexed ones stay)."""
        if merged.cues == existing.cues:
            return None
        try:
            return self.embedder.embed_documents([c.text for c in merged.cues])
        except EmbedderError as exc:
            log.warning("embedding merged cues failed; the indexed cues stay until reindex: %s", exc)
            return None

    def replay(self, tenant_id: str, idempotency_key: str | None) -> WriteResult | None:
        """The result of the first write made with this idempotency key, if there was one."""
        if not idempotency_key:
            return None
        first = self.store.find_by_idempotency_key(tenant_id, idempotency_key)
        return None if first is None else replayed(first)


def replayed(first: Memory) -> WriteResult:
    """What a write answers when its idempotency key was first written as `first`."""
    return WriteResult(action=WriteAction.CREATED, memory=first.view(), idempotent_replay=True)


def stored_idempotency_key(req: WriteRequest) -> str | None:
    """The key `req`'s idempotency key is stored under: scoped to the writing agent."""
    return agent_idempotency_key(req.agent_id, req.idempotency_key) if req.idempotency_key else None


def with_stored_key(req: WriteRequest) -> WriteRequest:
    """`req` (valid by construction) with its idempotency key made the stored, agent-scoped one."""
    return req.model_copy(update={"idempotency_key": stored_idempotency_key(req)})
