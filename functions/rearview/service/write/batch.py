"""Many writes, committed and indexed together: what `memory_ingest` writes through.

A `WriteBatch` decides each write as `Writer.write` does, one after the other, but gathers the
memories it creates and commits them `MAX_WRITES_PER_COMMIT` at a time: one store commit (atomic:
the chunk lands whole or not at all), then one index upsert that sets the keyword context of the
chunk's memories and rewrites each neighbour's once (`keyword_context`), instead of a commit, a
session read and up to three neighbour rewrites per write. Told the writes to come (`look_up`), it
reads all their idempotency keys in one store call instead of one read per write (on DynamoDB,
two BatchGetItems per ingest call instead of two GetItems per message).

Every write sees what the writes before it did, as in a loop of `Writer.write`: a write whose
decision could depend on a memory still waiting in the chunk (an exact or near duplicate of it in
the same scope, the same idempotency key) commits the chunk first; so does every write that is not
a plain create (a merge, a supersede, a write that names `supersedes`), which is then applied on
its own, and every write when a language model judges contradictions (it reads the index for
candidates). The results are the ones the loop would give, except that `indexed` says only
whether the memory has a vector until `flush`, which says whether the index took every chunk.

A store failure (a `ConflictError` from a concurrent writer of the same memory or idempotency key)
raises out of `write` or `flush` with the failing chunk not written and earlier chunks committed;
repeating the same writes with their idempotency keys then replays those and writes the rest. An
index failure loses nothing: the memories are stored unindexed (`rearview reconcile` repairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rearview.models import Memory, MemoryStatus, WriteRequest, WriteResult
from rearview.ports import MAX_WRITES_PER_COMMIT, IndexDocument, StoreWrite, Vector
from rearview.service import indexing, keyword_context
from rearview.service.write.decision import Create, Draft, Embedded
from rearview.service.write.writer import Writer, replayed, stored_idempotency_key, with_stored_key

__all__ = ["WriteBatch"]


@dataclass(slots=True)
class _Pending:
    """The chunk being gathered: its store writes, index documents and what later writes check."""

    writes: list[StoreWrite] = field(default_factory=list)
    docs: list[IndexDocument] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    digests: set[tuple[str, str]] = field(default_factory=set)
    vectors: dict[str, list[Vector]] = field(default_factory=dict)
    """Scope key -> the vectors of the chunk's memories in that scope."""


class WriteBatch:
    """Writes for one tenant, through `writer`, committed in chunks (see the module docstring).

    Call `flush` after the last write: until then the last chunk is neither stored nor indexed.
    """

    def __init__(self, writer: Writer, tenant_id: str, chunk: int = MAX_WRITES_PER_COMMIT) -> None:
        if not 1 <= chunk <= MAX_WRITES_PER_COMMIT:
            raise ValueError(f"chunk must be 1..{MAX_WRITES_PER_COMMIT}, got {chunk}")
        self._writer = writer
        self._tenant_id = tenant_id
        self._chunk = chunk
        self._pending = _Pending()
        self._indexed = True
        self._first_writes: dict[str, Memory] = {}
        """`look_up`'s answer: the memory each looked-up key was first written as, where there is one."""
        self._unused: set[str] = set()
        """Looked-up keys no write has asked about yet: only for those is `look_up`'s answer current."""

    def look_up(self, requests: Sequence[WriteRequest]) -> None:
        """Find the idempotency keys of writes about to be made, in one store call.

        A write asking about one of these keys the first time is answered from it instead of a store
        read per write (a round trip each on DynamoDB); a key asked about again (a repeat within the
        batch, which the first may have written) is read from the store as before. A concurrent
        writer that takes a key after this call makes the chunk's commit raise `ConflictError`, as
        without it (writing the same requests again, through a new batch, then replays its memory).
        """
        keys = {k for k in map(stored_idempotency_key, requests) if k}
        self._first_writes = self._writer.store.find_by_idempotency_keys(self._tenant_id, sorted(keys))
        self._unused = keys

    def write(self, req: WriteRequest, embedded: Embedded, judge: bool | None = None) -> WriteResult:
        """`Writer.write(tenant_id, req, embedded, judge=judge)`, committed by this or a later `flush`."""
        writer, tenant_id = self._writer, self._tenant_id
        req = with_stored_key(req)
        key = req.idempotency_key
        if key in self._pending.keys:
            self.flush()
        if key is not None and key in self._unused:
            self._unused.discard(key)
            first = self._first_writes.get(key)
            replay = None if first is None else replayed(first)
        else:
            replay = writer.replay(tenant_id, key)
        if replay is not None:
            return replay
        draft = writer.draft(req, embedded)
        judged = judge is not False and self._judges()
        if req.supersedes is not None or judged or self._depends_on_pending(draft):
            self.flush()
        target = writer.supersede_target(tenant_id, req)
        decision = writer.decide(tenant_id, draft, target, judge=judge)
        if target is not None or not isinstance(decision, Create):
            self.flush()
            return writer.apply(tenant_id, draft, decision)
        changes, result = writer.creation(tenant_id, draft, decision)
        self._stage(draft, changes.writes, changes.index_docs)
        if len(self._pending.writes) >= self._chunk:
            self.flush()
        return result

    def flush(self) -> bool:
        """Commit the gathered memories (one atomic commit), then index them; whether every chunk indexed.

        Raises what `MemoryStore.commit` raises, with nothing of this chunk written.
        """
        pending, self._pending = self._pending, _Pending()
        if not pending.writes:
            return self._indexed
        self._writer.store.commit(pending.writes)
        docs = [d for d in pending.docs if d.vector is not None]  # an unembedded memory is not indexed
        if len(docs) < len(pending.docs):
            self._indexed = False
        if docs:
            window = keyword_context.WRITE_WINDOW + len(docs)  # the chunk's memories are the newest
            new_ids = {d.memory.id for d in docs}
            with_context = keyword_context.documents_with_context(
                self._writer.store, self._tenant_id, docs, window, new_ids
            )
            self._indexed = indexing.upsert(self._writer.index, with_context) and self._indexed
        return self._indexed

    def _judges(self) -> bool:
        """Whether a language model judges contradictions (it reads the index, which lacks the chunk)."""
        config, consolidator = self._writer.config, self._writer.consolidator
        return config.contradiction_check and consolidator.can_judge

    def _depends_on_pending(self, draft: Draft) -> bool:
        """Whether a memory of the chunk could be this write's exact or near duplicate."""
        import numpy as np

        pending = self._pending
        if (draft.scope_key, draft.digest) in pending.digests:
            return True
        same_scope = pending.vectors.get(draft.scope_key)
        if draft.vector is None or not same_scope:
            return False
        similarity = np.stack(same_scope) @ draft.vector
        return bool(similarity.max() >= self._writer.config.near_duplicate_threshold)

    def _stage(self, draft: Draft, writes: list[StoreWrite], docs: list[IndexDocument]) -> None:
        pending = self._pending
        pending.writes.extend(writes)
        pending.docs.extend(docs)
        if draft.req.idempotency_key:
            pending.keys.add(draft.req.idempotency_key)
        for w in writes:
            if w.memory.status is MemoryStatus.ACTIVE:
                pending.digests.add((w.memory.scope_key, w.memory.content_hash))
        if draft.vector is not None:
            pending.vectors.setdefault(draft.scope_key, []).append(draft.vector)
