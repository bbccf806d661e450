"""Extractive consolidation: pick the most central, important statements of a set of memories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rearview.clock import to_iso
from rearview.limits import MAX_CONTENT_CHARS
from rearview.models import Memory
from rearview.ports import Vector

SUMMARY_BUDGET_CHARS = MAX_CONTENT_CHARS // 2


def extractive_summary(memories: Sequence[Memory], vectors: Vector, label: str) -> str:
    """A summary made of the sources' own sentences, in event order, within `SUMMARY_BUDGET_CHARS`.

    Each memory scores centrality (cosine to the centroid) x importance x strength; the best are
    kept while they fit the budget, then re-ordered by event time so the summary reads as a story.
    The best one is always kept: when it alone is over the budget, it is cut at a word boundary
    (marked with an ellipsis), so a summary is never empty.
    """
    centroid = vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid)) or 1.0
    centrality = vectors @ (centroid / norm)
    scored = sorted(
        range(len(memories)),
        key=lambda i: -(float(centrality[i]) + 1) * memories[i].importance * max(memories[i].strength, 0.1),
    )
    start, end = min(m.event_time for m in memories), max(m.event_time for m in memories)
    header = f"Summary of {label} ({to_iso(start)[:10]} to {to_iso(end)[:10]}, {len(memories)} memories): "
    chosen: dict[int, str] = {}
    used = len(header) + 1  # the final period
    for i in scored:
        piece = memories[i].content.strip().rstrip(".")
        room = SUMMARY_BUDGET_CHARS - used - (2 if chosen else 0)
        if len(piece) > room:
            if chosen:
                continue
            piece = clip(piece, room)
        chosen[i] = piece
        used += len(piece) + (2 if len(chosen) > 1 else 0)
    order = sorted(chosen, key=lambda i: (memories[i].event_time, memories[i].id))
    return header + "; ".join(chosen[i] for i in order) + "."


def clip(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, at the last word boundary, ending with an ellipsis."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    head = cut.rsplit(None, 1)[0] if " " in cut.strip() else cut
    return head.rstrip(" ,;:") + "\u2026"
