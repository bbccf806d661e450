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
from rearview.ports import Embedder, IndexDocument, MemoryIndex, Vector, query_views_of
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


def embed_texts(
    embedder: Embedder, texts: Sequence[tuple[str, Sequence[str]]], *, views: Sequence[float] | None = None
) -> list[Embedding]:
    """Each (content, cues)'s vectors: content, cues and the content's parts, in one embedder call.

    Parts: `rearview.text.parts.content_parts`. `views[i]` (default 0 for all): the weight of item
    i's query view in its content's vector (`statement_vectors`; a standalone memory's,
    `view_weight`); its cues, already worded as questions, and its parts stay passages.

    Raises EmbedderError as `embed_documents` does.
    """
    parts = [content_parts(content) for content, _ in texts]
    flat: list[str] = []
    weights: list[float] = []
    for n, ((content, cues), own) in enumerate(zip(texts, parts, strict=True)):
        flat.extend((content, *cues, *own))
        weights.extend([views[n] if views else 0.0] + [0.0] * (len(cues) + len(own)))
    matrix = statement_vectors(embedder, flat, weights) if flat else None
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


def statement_vectors(embedder: Embedder, texts: Sequence[str], weights: Sequence[float]) -> Vector:
    """Each text's vector: `normalize(passage + weights[i] x query)`, the passage where the weight is 0.

    multilingual-e5 embeds what is searched for with `query: ` and what is stored with `passage: `;
    a short statement is later asked for in other words, and its query embedding lies nearer to the
    questions that paraphrase it (benchmarks/recall/document_views.py). The passages are one embedder
    call, the query views of the weighted texts one more (`ports.query_views_of`: document work,
    not a search's).

    Raises EmbedderError as `embed_documents` does.
    """
    import numpy as np

    passages = embedder.embed_documents(texts)
    rows = [i for i, w in enumerate(weights) if w > 0]
    if not rows:
        return passages
    queries = np.asarray(query_views_of(embedder, [texts[i] for i in rows]), dtype=np.float32)
    out = np.array(passages, dtype=np.float32)
    mixed = out[rows] + np.asarray([weights[i] for i in rows], dtype=np.float32)[:, None] * queries
    out[rows] = mixed / np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)
    return out


def view_weight(session_id: str | None, query_view: float) -> float:
    """The weight of a memory's query view: `query_view` for a standalone one, 0 for a session's turn.

    A conversation's turns keep their passages: through the service, the keyword channel and the
    relevance model already carry what the view adds to them (LoCoMo's R@10 fell by .004-.011 with
    it; benchmarks/findings/recall.md).
    """
    return query_view if session_id is None else 0.0


def index_documents(
    embedder: Embedder,
    memories: Sequence[Memory],
    contexts: Mapping[str, str] | None = None,
    *,
    query_view: float = 0.0,
) -> list[IndexDocument]:
    """Full documents of `memories`: content, cues and parts embedded in one call, with their `contexts`.

    A standalone memory's (no `session_id`) content takes its query view at `query_view` (`embed_texts`).

    Raises EmbedderError as `embed_documents` does.
    """
    vectors = embed_texts(
        embedder,
        [(m.content, [c.text for c in m.cues]) for m in memories],
        views=[view_weight(m.session_id, query_view) for m in memories],
    )
    return [
        IndexDocument(
            m, e.vector, cue_vectors=e.cues, part_vectors=e.parts, context=(contexts or {}).get(m.id)
        )
        for m, e in zip(memories, vectors, strict=True)
    ]


def embed_memory(embedder: Embedder, memory: Memory, *, query_view: float = 0.0) -> IndexDocument | None:
    """One memory's full document, or None when the embedder fails (it stays unindexed)."""
    try:
        return index_documents(embedder, [memory], query_view=query_view)[0]
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
