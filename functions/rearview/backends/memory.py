"""In-memory adapters: fast unit-test doubles with the exact semantics of the real backends.

The contract suite (`tests/contract/`) runs the same tests against these and every real adapter.
"""

from __future__ import annotations

import base64
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from rearview.backends.due_order import DUE_STATUSES, decode_due_cursor, due_text, encode_due_cursor
from rearview.backends.vector_checks import check_rows, check_vector
from rearview.backends.version_pages import after_id, check_limit, cursor_after
from rearview.errors import ConflictError, InvalidInputError, NotFoundError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus, Page, StoreStats
from rearview.ports import (
    CONTEXT_WEIGHT,
    CUE_WEIGHT,
    ChannelHits,
    DueAt,
    DueJob,
    IndexDocument,
    IndexedVersions,
    IndexQuery,
    StoreWrite,
    Touch,
    Vector,
)
from rearview.shared.clock import Clock, SystemClock
from rearview.text.bm25 import bm25_search_fields
from rearview.text.fts_terms import text_terms


def encode_offset(offset: int) -> str:
    """An opaque cursor for offset-based listings."""
    return base64.urlsafe_b64encode(str(offset).encode()).decode()


def decode_offset(cursor: str | None) -> int:
    """The offset in a cursor made by `encode_offset` (0 for None)."""
    if cursor is None:
        return 0
    try:
        return int(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page") from exc


class InMemoryMemoryStore:
    """A dict-backed `MemoryStore`. Thread-safe; expired items read as absent."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._memories: dict[tuple[str, str], Memory] = {}
        self._history: dict[tuple[str, str], list[HistoryEvent]] = {}
        self._lineage: dict[tuple[str, str], set[str]] = {}
        self._fade: dict[tuple[str, str], datetime] = {}
        """When each memory is next due for decay (`schedule`; a commit sets its `updated_at`)."""

    def ensure_schema(self) -> None:
        """Nothing to create."""

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        with self._lock:
            for w in writes:
                current = self._memories.get((w.memory.tenant_id, w.memory.id))
                actual = current.version if current is not None else None
                if actual != w.expected_version:
                    raise ConflictError(w.memory.id, w.expected_version, actual)
            for w in writes:
                key = (w.memory.tenant_id, w.memory.id)
                self._memories[key] = w.memory
                self._fade.pop(key, None)
                if w.memory.status in DUE_STATUSES:
                    self._fade[key] = w.memory.updated_at
                for source_id in w.memory.derived_from:
                    self._lineage.setdefault((w.memory.tenant_id, source_id), set()).add(w.memory.id)
                if w.event is not None:
                    self._history.setdefault(key, []).append(w.event)

    def _live(self, memory: Memory | None) -> Memory | None:
        return None if memory is None or memory.is_expired(self._clock.now()) else memory

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        return self._live(self._memories.get((tenant_id, memory_id)))

    def get_many(self, tenant_id: str, memory_ids: Sequence[str], *, recalls: bool = True) -> list[Memory]:
        found = (self.get(tenant_id, memory_id) for memory_id in dict.fromkeys(memory_ids))
        return [m for m in found if m is not None]

    def find_by_hash(
        self, tenant_id: str, scope_key: str, content_hash: str, agent_id: str | None = None
    ) -> Memory | None:
        for m in self._tenant(tenant_id):
            if (
                m.scope_key == scope_key
                and m.content_hash == content_hash
                and m.status is MemoryStatus.ACTIVE
                and agent_id in (None, m.agent_id)
            ):
                return m
        return None

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        return self.find_by_idempotency_keys(tenant_id, [key]).get(key)

    def find_by_idempotency_keys(self, tenant_id: str, keys: Sequence[str]) -> dict[str, Memory]:
        wanted = set(keys)
        return {
            m.idempotency_key: m
            for m in self._tenant(tenant_id)
            if m.idempotency_key is not None and m.idempotency_key in wanted
        }

    def list_memories(
        self,
        tenant_id: str,
        filter: MemoryFilter,
        cursor: str | None = None,
        limit: int = 100,
        *,
        oldest_first: bool = False,
    ) -> Page:
        matching = sorted(
            (m for m in self._tenant(tenant_id) if filter.matches(m)),
            key=lambda m: (m.updated_at, m.id),
            reverse=not oldest_first,
        )
        start = decode_offset(cursor)
        items = matching[start : start + limit]
        more = start + limit < len(matching)
        return Page(items=items, cursor=encode_offset(start + limit) if more else None)

    def history(self, tenant_id: str, memory_id: str) -> list[HistoryEvent]:
        return list(self._history.get((tenant_id, memory_id), []))

    def touch(self, tenant_id: str, touches: Sequence[Touch]) -> None:
        with self._lock:
            for t in touches:
                current = self._memories.get((tenant_id, t.memory_id))
                if current is not None and t.is_after(current.last_accessed_at, current.access_count):
                    self._memories[(tenant_id, t.memory_id)] = current.model_copy(
                        update={
                            "strength": t.strength,
                            "last_accessed_at": t.last_accessed_at,
                            "access_count": t.access_count,
                        }
                    )

    def purge(self, tenant_id: str, memory_id: str) -> None:
        with self._lock:
            self._memories.pop((tenant_id, memory_id), None)
            self._history.pop((tenant_id, memory_id), None)
            self._lineage.pop((tenant_id, memory_id), None)
            self._fade.pop((tenant_id, memory_id), None)
            for (tenant, _), derived in self._lineage.items():
                if tenant == tenant_id:
                    derived.discard(memory_id)

    def derived_ids(self, tenant_id: str, source_id: str) -> list[str]:
        with self._lock:
            return sorted(self._lineage.get((tenant_id, source_id), set()))

    def rewrite_history(self, tenant_id: str, memory_id: str, events: Sequence[HistoryEvent]) -> None:
        replacements = {e.id: e for e in events}
        with self._lock:
            kept = self._history.get((tenant_id, memory_id))
            if kept is not None:
                self._history[(tenant_id, memory_id)] = [replacements.get(e.id, e) for e in kept]

    def stats(self, tenant_id: str) -> StoreStats:
        items = list(self._tenant(tenant_id))
        return StoreStats(
            total=len(items),
            by_type=dict(Counter(m.type.value for m in items)),
            by_status=dict(Counter(m.status.value for m in items)),
            oldest=min((m.created_at for m in items), default=None),
            newest=max((m.created_at for m in items), default=None),
        )

    def tenants(self) -> list[str]:
        return sorted({tenant for tenant, _ in self._memories})

    def list_expired(self, tenant_id: str, limit: int = 100) -> list[Memory]:
        now = self._clock.now()
        expired = [m for (t, _), m in list(self._memories.items()) if t == tenant_id and m.is_expired(now)]
        return sorted(expired, key=lambda m: (m.expires_at, m.id))[:limit]

    def list_due(
        self, tenant_id: str, job: DueJob, before: datetime, cursor: str | None = None, limit: int = 100
    ) -> Page:
        after = decode_due_cursor(cursor)
        due: list[tuple[str, str, Memory]] = []
        for m in self._tenant(tenant_id):
            when = m.expires_at if job == "archive" else self._fade.get((tenant_id, m.id))
            if m.status in DUE_STATUSES and when is not None and when <= before:
                position = (due_text(when), m.id)
                if after is None or position > after:
                    due.append((*position, m))
        due.sort(key=lambda d: (d[0], d[1]))
        page = due[:limit]
        more = len(due) > limit
        return Page(items=[m for *_, m in page], cursor=encode_due_cursor(*page[-1][:2]) if more else None)

    def schedule(self, tenant_id: str, entries: Sequence[DueAt]) -> None:
        with self._lock:
            for entry in entries:
                key = (tenant_id, entry.memory_id)
                current = self._memories.get(key)
                if current is None or current.version != entry.version or current.status not in DUE_STATUSES:
                    continue
                self._fade.pop(key, None)
                if entry.due is not None:
                    self._fade[key] = entry.due

    def _tenant(self, tenant_id: str) -> Iterator[Memory]:
        now = self._clock.now()
        for (tenant, _), m in list(self._memories.items()):
            if tenant == tenant_id and not m.is_expired(now):
                yield m


class InMemoryMemoryIndex:
    """A brute-force `MemoryIndex`: BM25 over FTS5's terms (`text_terms`), exact cosine over numpy vectors.

    BM25 counts the context's words at `CONTEXT_WEIGHT` and the recall cues' at `CUE_WEIGHT`
    (`bm25_rank_fields`, FTS5's semantics); a document's cosine is the best of its content's and
    (with `IndexQuery.match_cues`) its cues' and its parts'.

    Version-conditional like every index: the indexed `Memory` carries its version.
    """

    def __init__(self, dimension: int | None = None) -> None:
        self._dimension = dimension
        self._docs: dict[tuple[str, str], _Indexed] = {}
        self._lock = threading.Lock()

    def ensure_schema(self) -> None:
        """Nothing to create."""

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        with self._lock:
            for doc in docs:
                key = (doc.memory.tenant_id, doc.memory.id)
                indexed = self._docs.get(key)
                if indexed is not None and indexed.memory.version > doc.memory.version:
                    continue  # a newer version is indexed: this write is stale
                if doc.vector is None:
                    if indexed is not None and indexed.memory.content_hash == doc.memory.content_hash:
                        context = indexed.context if doc.context is None else text_terms(doc.context)
                        cues, cue_vectors = indexed.cues, indexed.cue_vectors
                        if doc.cue_vectors is not None:
                            cues, cue_vectors = _cues(doc, self._dimension)
                        self._docs[key] = replace(  # vector, text and parts stay with the content
                            indexed, memory=doc.memory, context=context, cues=cues, cue_vectors=cue_vectors
                        )
                    continue
                vector = check_vector(doc.vector, self._dimension)
                body, context = text_terms(doc.memory.content), text_terms(doc.context or "")
                parts = doc.part_vectors
                parts = check_rows(parts, self._dimension) if parts is not None and len(parts) else None
                self._docs[key] = _Indexed(
                    doc.memory, vector, body, context, *_cues(doc, self._dimension), parts
                )

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """`delete`: nothing of a document outlives it in memory."""
        self.delete(tenant_id, memory_ids)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._docs.pop((tenant_id, memory_id), None)

    def count(self, tenant_id: str) -> int:
        return sum(1 for tenant, _ in self._docs if tenant == tenant_id)

    def versions(self, tenant_id: str, cursor: str | None = None, limit: int = 1000) -> IndexedVersions:
        check_limit(limit)
        after = after_id(cursor)
        with self._lock:
            pairs = sorted(
                (memory_id, d.memory.version)
                for (tenant, memory_id), d in self._docs.items()
                if tenant == tenant_id and (after is None or memory_id > after)
            )
        page = pairs[:limit]
        return IndexedVersions(page, cursor_after(page[-1][0]) if len(pairs) > limit else None)

    def search(self, query: IndexQuery) -> ChannelHits:
        import numpy as np

        candidates = [
            d
            for (tenant, _), d in list(self._docs.items())
            if tenant == query.tenant_id and query.filter.matches(d.memory)
        ]
        keyword: list[tuple[str, float]] = []
        ceiling = 0.0
        vector: list[tuple[str, float]] = []
        carriers: dict[str, int] = {}
        if query.text is not None:
            fields = [(d.memory.id, d.body, d.context, d.cues) for d in candidates]
            keyword, ceiling = bm25_search_fields(fields, query.text, query.limit, CONTEXT_WEIGHT, CUE_WEIGHT)
        q = None if query.vector is None else check_vector(query.vector, self._dimension)  # empty or not
        if q is not None and candidates:
            sims = np.stack([d.vector for d in candidates]) @ q
            best: list[float] = []
            for d, sim in zip(candidates, sims, strict=True):
                score = float(sim)
                if query.match_cues and d.part_vectors is not None:
                    score = max(score, float(np.max(d.part_vectors @ q)))
                if query.match_cues and d.cue_vectors is not None and len(d.cue_vectors):
                    cue_sims = d.cue_vectors @ q
                    n = int(np.argmax(cue_sims))
                    if float(cue_sims[n]) > score:
                        score = float(cue_sims[n])
                        carriers[d.memory.id] = n
                best.append(score)
            ranked = sorted((-best[i], d.memory.id) for i, d in enumerate(candidates))
            vector = [(memory_id, -neg) for neg, memory_id in ranked[: query.limit]]
            carriers = {i: carriers[i] for i, _ in vector if i in carriers}
        return ChannelHits(keyword, vector, ceiling, vector_cues=carriers)


@dataclass(frozen=True, slots=True)
class _Indexed:
    """One document of `InMemoryMemoryIndex`: the memory, its vector, its content and context terms."""

    memory: Memory
    vector: Vector
    body: list[str]
    context: list[str]
    cues: list[str] = field(default_factory=list)
    """The recall cues' terms, all cues in one field (as FTS5's third column holds them)."""
    cue_vectors: Vector | None = None
    part_vectors: Vector | None = None
    """The content's parts' vectors (`IndexDocument.part_vectors`); None: it has none."""


def _cues(doc: IndexDocument, dimension: int | None) -> tuple[list[str], Vector | None]:
    """A document's cue terms and checked cue vectors (none without `cue_vectors`)."""
    if doc.cue_vectors is None or not doc.memory.cues:
        return [], None
    return text_terms(doc.cue_text), check_rows(doc.cue_vectors, dimension)


class InMemoryArchive:
    """A dict-backed `Archive`: one entry per `put` batch."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, tuple[Memory, list[HistoryEvent]]]] = {}
        self._seq = 0

    def put(self, tenant_id: str, items: Sequence[tuple[Memory, Sequence[HistoryEvent]]]) -> str:
        self._seq += 1
        ref = f"tenant={tenant_id}/batch-{self._seq:06d}"
        self._objects[ref] = {m.id: (m, list(h)) for m, h in items}
        return ref

    def get(self, tenant_id: str, ref: str, memory_id: str) -> tuple[Memory, list[HistoryEvent]]:
        entry = self._objects.get(ref, {}).get(memory_id) if ref.startswith(f"tenant={tenant_id}/") else None
        if entry is None:
            raise NotFoundError(memory_id)
        return entry[0], list(entry[1])

    def delete(self, tenant_id: str, ref: str, memory_id: str) -> None:
        if ref.startswith(f"tenant={tenant_id}/") and ref in self._objects:
            self._objects[ref].pop(memory_id, None)
            if not self._objects[ref]:
                del self._objects[ref]

    def iter_refs(self, tenant_id: str) -> Iterator[str]:
        yield from (ref for ref in list(self._objects) if ref.startswith(f"tenant={tenant_id}/"))
