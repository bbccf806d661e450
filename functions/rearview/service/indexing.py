"""Best-effort upkeep of the derived index: embed, upsert, delete.

The store is the source of truth and is written first; these never raise for an embedder or
index outage. They log it and report it (`None` vector, `False`), and `rearview reindex` repairs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from rearview.errors import EmbedderError, IndexUnavailableError
from rearview.models import Memory, MemoryStatus
from rearview.ports import Embedder, IndexDocument, MemoryIndex, Vector

log = logging.getLogger(__name__)

INDEXED_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.DELETED)
"""The statuses whose memories the index holds: what `memory_search(as_of=...)` may find (a memory
retired since); search filters on status inside the query, so a normal search matches active ones."""


def embed_with_cues(
    embedder: Embedder, texts: Sequence[tuple[str, Sequence[str]]]
) -> list[tuple[Vector, Vector | None]]:
    """Each (content, cues)'s content vector and cue vectors (None: no cues), in one embedder call.

    Raises EmbedderError as `embed_documents` does.
    """
    flat = [t for content, cues in texts for t in (content, *cues)]
    matrix = embedder.embed_documents(flat) if flat else None
    out: list[tuple[Vector, Vector | None]] = []
    at = 0
    for _, cues in texts:
        assert matrix is not None
        out.append((matrix[at], matrix[at + 1 : at + 1 + len(cues)] if cues else None))
        at += 1 + len(cues)
    return out


def index_documents(
    embedder: Embedder, memories: Sequence[Memory], contexts: Mapping[str, str] | None = None
) -> list[IndexDocument]:
    """Full documents of `memories`: content and cues embedded in one call, with their `contexts`.

    Raises EmbedderError as `embed_documents` does.
    """
    vectors = embed_with_cues(embedder, [(m.content, [c.text for c in m.cues]) for m in memories])
    return [
        IndexDocument(m, vector, cue_vectors=cues, context=(contexts or {}).get(m.id))
        for m, (vector, cues) in zip(memories, vectors, strict=True)
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
