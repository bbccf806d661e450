"""Best-effort upkeep of the derived index: embed, upsert, delete.

The store is the source of truth and is written first; these never raise for an embedder or
index outage. They log it and report it (`None` vector, `False`), and `rearview reindex` repairs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rearview.errors import EmbedderError, IndexUnavailableError
from rearview.models import Memory, MemoryStatus
from rearview.ports import Embedder, IndexDocument, MemoryIndex, Vector
from rearview.text.parts import content_parts

log = logging.getLogger(__name__)

INDEXED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.DELETED)
"""The statuses whose memories the index holds: what `memory_search(as_of=...)` may find (a memory
retired since); search filters on status inside the query, so a normal search matches active ones."""


@dataclass(frozen=True, slots=True)
class Embedding:
    """One memory's vectors: its content's, its cues' (None: no cues) and its parts' (None: none)."""

    vector: Vector
    cues: Vector | None = None
    parts: Vector | None = None


def embed_texts(embedder: Embedder, texts: Sequence[tuple[str, Sequence[str]]]) -> list[Embedding]:
    """Each (content, cues)'s vectors: content, cues and the content's parts, in one embedder call.

    Parts: `rearview.text.parts.content_parts`.

    Raises EmbedderError as `embed_documents` does.
    """
    parts = [content_parts(content) for content, _ in texts]
    flat = [t for (content, cues), own in zip(texts, parts, strict=True) for t in (content, *cues, *own)]
    matrix = embedder.embed_documents(flat) if flat else None
    out: list[Embedding] = []
    at = 0
    for (_, cues), own in zip(texts, parts, strict=True):
        assert matrix is not None
        cue_end, part_end = at + 1 + len(cues), at + 1 + len(cues) + len(own)
        out.append(
            Embedding(
                matrix[at],
                matrix[at + 1 : cue_end] if cues else None,
                matrix[cue_end:part_end] if own else None,
            )
        )
        at = part_end
    return out


def index_documents(
    embedder: Embedder, memories: Sequence[Memory], contexts: Mapping[str, str] | None = None
) -> list[IndexDocument]:
    """Full documents of `memories`: content, cues and parts embedded in one call, with their `contexts`.

    Raises EmbedderError as `embed_documents` does.
    """
    vectors = embed_texts(embedder, [(m.content, [c.text for c in m.cues]) for m in memories])
    return [
        IndexDocument(
            m, e.vector, cue_vectors=e.cues, part_vectors=e.parts, context=(contexts or {}).get(m.id)
        )
        for m, e in zip(memories, vectors, strict=True)
    ]


def embed_memory(embedder: Embedder, memory: Memory) -> IndexDocument | None:
    """One memory's full document, or None when the embedder fails (it stays unindexed)."""
    try:
        return index_documents(embedder, [memory])[0]
    except EmbedderError as exc:
        log.warning("embedding failed, memory stored unindexed: %s", exc)
        return None


def embed_document(embedder: Embedder, content: str) -> Vector | None:
    """The content's document vector, or None when the embedder fails (the memory is stored unindexed)."""
    try:
        vector: Vector = embedder.embed_documents([content])[0]
        return vector
    except EmbedderError as exc:
        log.warning("embedding failed, memory stored unindexed: %s", exc)
        return None


def upsert(index: MemoryIndex, docs: Sequence[IndexDocument]) -> bool:
    """Write `docs` to the index; False (and nothing raised) when the index is unavailable."""
    try:
        index.upsert(docs)
    except IndexUnavailableError as exc:
        log.warning("index write failed; `rearview reindex` will repair: %s", exc)
        return False
    return True


def delete(index: MemoryIndex, tenant_id: str, ids: Sequence[str], *, erase: bool = False) -> None:
    """Remove `ids` from the index (`erase`: leaving no copy in its files, for a hard forget).

    An unavailable index is logged, not raised: search re-checks every hit against the store, and
    `rearview reconcile` erases documents whose memory the store no longer holds.
    """
    if not ids:
        return
    try:
        (index.erase if erase else index.delete)(tenant_id, ids)
    except IndexUnavailableError as exc:
        log.warning("index delete failed; search re-checks the store, `rearview reconcile` repairs: %s", exc)
