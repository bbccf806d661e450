"""Document identity: how a memory's document is found again to replace or delete it.

Two strategies, chosen once when the adapter is built (`OpenSearchConfig.uses_assigned_ids`):

- `OwnIds` (managed domain, local node): `_id = "<tenant_id>:<memory_id>"`; upserts are bulk
  `index` actions with the memory version as an external version (`external_gte`), so the engine
  itself refuses a stale write (the adapter counts that conflict as skipped, not failed); a
  vector-less upsert first reads its document by id (realtime `mget`) for the vector and text
  (and context and recall cues, unless it brings them) it keeps. Deletes are bulk `delete`
  actions by id, without reading first.
- `AssignedIds` (Serverless vector collections, which reject custom ids and have no refresh
  control): the memory id is only a field. An upsert looks up the existing documents of the
  batch by `(tenant_id, memory_id)`, then deletes them by their assigned `_id` and indexes the
  new versions without an id, in the same `_bulk`; it skips the memory when a copy it sees holds
  a newer version. Engine-assigned ids cannot carry external versions, and reads lag writes by
  seconds there, so a write that follows another write of the same memory too closely can
  leave a stale copy behind; search keeps only the best hit per memory id, `versions` reports
  the lowest version of the copies (so reconcile rewrites it), and the next upsert of that
  memory removes every copy it can see.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from rearview.backends.opensearch.mapping import (
    CONTEXT_FIELD,
    CUE_VECTORS_FIELD,
    CUES_FIELD,
    Json,
    cue_entries,
    document_source,
    keyword_terms,
)
from rearview.backends.opensearch.queries import as_mapping, hit_list, lookup_body

if TYPE_CHECKING:
    from rearview.models import Memory
    from rearview.ports import IndexDocument, Vector

__all__ = ["AssignedIds", "BulkOp", "DocumentIds", "Fetch", "OwnIds", "Search"]

BulkOp = tuple[Json, Json | None]
"""One bulk operation: the action line and its source line (None for a delete)."""

Search = Callable[[str, Json], Mapping[str, Any]]
"""Runs a search body against an index and returns the response (engine errors already translated)."""

Fetch = Callable[[str, Sequence[str]], Mapping[str, Any]]
"""Reads documents by `_id` in realtime (an `mget` of `_source` fields) and returns the response."""

_LOOKUP_CHUNK: Final = 1000  # memory ids per lookup query


class DocumentIds(Protocol):
    """Turns upserts and deletes of memories into bulk operations on one index."""

    def upsert_ops(self, index: str, batch: Sequence[IndexDocument]) -> list[BulkOp]:
        """Operations that write every document of `batch` (distinct memories, vectors already checked).

        A None vector updates only the filterable fields (and a given context, and given cue
        vectors with the cues' text) of an existing document, keeping its vector and text; an
        absent document, or one of other content, is left alone. No operation may replace a
        document of a newer version.
        """
        ...

    def delete_ops(self, index: str, tenant_id: str, memory_ids: Sequence[str]) -> list[BulkOp]:
        """Operations that remove every document of the tenant's `memory_ids` (distinct, non-empty)."""
        ...


class OwnIds:
    """`_id = "<tenant_id>:<memory_id>"`: every operation addresses its document directly.

    `fetch` reads the documents that vector-less upserts keep the vector and text of.
    """

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch

    def upsert_ops(self, index: str, batch: Sequence[IndexDocument]) -> list[BulkOp]:
        partial = [_own_id(d.memory.tenant_id, d.memory.id) for d in batch if d.vector is None]
        existing = self._existing(index, partial) if partial else {}
        ops: list[BulkOp] = []
        for doc in batch:
            memory = doc.memory
            doc_id = _own_id(memory.tenant_id, memory.id)
            if doc.vector is not None:
                source = document_source(
                    memory,
                    doc.vector,
                    doc.context,
                    cue_vectors=doc.cue_vectors,
                    part_vectors=doc.part_vectors,
                )
            else:
                found = existing.get(doc_id)
                if found is None or not _may_write(memory, None, [found]):
                    continue
                source = _kept(doc, found)
            ops.append((_versioned_index(index, doc_id, memory.version), source))
        return ops

    def delete_ops(self, index: str, tenant_id: str, memory_ids: Sequence[str]) -> list[BulkOp]:
        return [_delete_op(index, _own_id(tenant_id, mid)) for mid in memory_ids]

    def _existing(self, index: str, doc_ids: Sequence[str]) -> dict[str, _Found]:
        response = self._fetch(index, doc_ids)
        docs = response.get("docs")
        found: dict[str, _Found] = {}
        for entry in docs if isinstance(docs, list) else []:
            doc = as_mapping(entry)
            if doc.get("found"):
                found[str(doc.get("_id"))] = _Found.of(str(doc.get("_id")), as_mapping(doc.get("_source")))
        return found


class AssignedIds:
    """The engine assigns `_id`; the memory id is a field, so every write first looks its documents up.

    `search` runs the lookups (with the bulk timeout: they are part of a write).
    """

    def __init__(self, search: Search) -> None:
        self._search = search

    def upsert_ops(self, index: str, batch: Sequence[IndexDocument]) -> list[BulkOp]:
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for doc in batch:
            by_tenant[doc.memory.tenant_id].append(doc.memory.id)
        need_vectors = any(doc.vector is None for doc in batch)
        existing: dict[tuple[str, str], list[_Found]] = {}
        for tenant_id, ids in by_tenant.items():
            for mid, copies in self._lookup(index, tenant_id, ids, with_vector=need_vectors).items():
                existing[(tenant_id, mid)] = copies
        ops: list[BulkOp] = []
        for doc in batch:
            memory = doc.memory
            old = existing.get((memory.tenant_id, memory.id), [])
            if not _may_write(memory, doc.vector, old):
                continue
            if doc.vector is None:
                with_vector = next((f for f in old if f.vector is not None), old[0])
                source = _kept(doc, with_vector)
            else:
                source = _without_nulls(
                    document_source(
                        memory,
                        doc.vector,
                        doc.context,
                        cue_vectors=doc.cue_vectors,
                        part_vectors=doc.part_vectors,
                    )
                )
            ops.extend(_delete_op(index, found.id) for found in old)
            ops.append(({"index": {"_index": index}}, source))
        return ops

    def delete_ops(self, index: str, tenant_id: str, memory_ids: Sequence[str]) -> list[BulkOp]:
        found = self._lookup(index, tenant_id, memory_ids, with_vector=False)
        return [_delete_op(index, copy.id) for copies in found.values() for copy in copies]

    def _lookup(
        self, index: str, tenant_id: str, memory_ids: Sequence[str], *, with_vector: bool
    ) -> dict[str, list[_Found]]:
        """Existing documents of `memory_ids` by their engine-assigned ids (all copies of each)."""
        found: dict[str, list[_Found]] = defaultdict(list)
        for start in range(0, len(memory_ids), _LOOKUP_CHUNK):
            chunk = memory_ids[start : start + _LOOKUP_CHUNK]
            response = self._search(index, lookup_body(tenant_id, chunk, with_vector=with_vector))
            for hit in hit_list(response):
                src = as_mapping(hit.get("_source"))
                found[str(src.get("memory_id"))].append(_Found.of(str(hit.get("_id")), src))
        return found


@dataclass(frozen=True, slots=True)
class _Found:
    """An existing document: its `_id`, memory version, content hash, vector, text, context and cues.

    Version 0 and hash None: written before versions were indexed. No cues: written before them.
    """

    id: str
    version: int
    content_hash: str | None
    vector: list[float] | None
    content: str
    context: str
    cues: str = ""
    cue_vectors: list[Any] | None = None
    """`CUE_VECTORS_FIELD` as indexed (kept as it is by a vector-less update that brings no cues)."""

    @classmethod
    def of(cls, doc_id: str, src: Mapping[str, Any]) -> _Found:
        version, digest = src.get("memory_version"), src.get("content_hash")
        vector, content, context = src.get("vector"), src.get("content"), src.get(CONTEXT_FIELD)
        cues, cue_vectors = src.get(CUES_FIELD), src.get(CUE_VECTORS_FIELD)
        return cls(
            id=doc_id,
            version=version if isinstance(version, int) else 0,
            content_hash=digest if isinstance(digest, str) else None,
            vector=vector if isinstance(vector, list) else None,
            content=content if isinstance(content, str) else "",
            context=context if isinstance(context, str) else "",
            cues=cues if isinstance(cues, str) else "",
            cue_vectors=cue_vectors if isinstance(cue_vectors, list) else None,
        )


def _may_write(memory: Memory, vector: Vector | None, existing: Sequence[_Found]) -> bool:
    """Whether a write of `memory` may replace `existing` (its indexed copies).

    Never over a newer version; a vector-less write only over a document of the same content
    (a None hash: indexed before hashes were kept, trusted as before).
    """
    if any(found.version > memory.version for found in existing):
        return False
    if vector is not None:
        return True
    return bool(existing) and all(f.content_hash in (None, memory.content_hash) for f in existing)


def _kept(doc: IndexDocument, found: _Found) -> Json:
    """A vector-less update's source: `found`'s vector and text, its context and cues unless `doc` has them.

    Cues come as `IndexDocument.cue_vectors`: their text and vectors are replaced together; the
    content's parts (negative `cue` entries, `mapping.part_entries`) stay with the content.
    """
    fresh = document_source(doc.memory, None, doc.context)
    context = found.context if doc.context is None else doc.context
    if doc.cue_vectors is None:
        cues, cue_vectors = found.cues, found.cue_vectors
    else:
        parts = [e for e in found.cue_vectors or () if _is_part(e)]
        cues, cue_vectors = doc.cue_text, cue_entries(doc.cue_vectors) + parts
    return _without_nulls(
        {
            **fresh,
            CONTEXT_FIELD: context,
            "content": found.content,
            "vector": found.vector,
            CUES_FIELD: cues,
            CUE_VECTORS_FIELD: cue_vectors,
            **keyword_terms(found.content, context, cues),
        }
    )


def _is_part(entry: object) -> bool:
    """Whether an indexed `CUE_VECTORS_FIELD` entry is a part of the content (a negative `cue`)."""
    cue = as_mapping(entry).get("cue")
    return isinstance(cue, int) and cue < 0


def _delete_op(index: str, doc_id: str) -> BulkOp:
    """A bulk `delete` of `doc_id` (a missing document answers 404 without an error)."""
    return {"delete": {"_index": index, "_id": doc_id}}, None


def _own_id(tenant_id: str, memory_id: str) -> str:
    return f"{tenant_id}:{memory_id}"


def _versioned_index(index: str, doc_id: str, version: int) -> Json:
    """A bulk `index` action the engine refuses (`version_conflict_engine_exception`) over a newer version."""
    return {"index": {"_index": index, "_id": doc_id, "version": version, "version_type": "external_gte"}}


def _without_nulls(source: Json) -> Json:
    return {key: value for key, value in source.items() if value is not None}
