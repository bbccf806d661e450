"""Extractive consolidation: pick the most central, important statements of a set of memories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rearview.clock import to_iso
from rearview.models import MAX_CONTENT_CHARS, Memory
from rearview.ports import Vector

SUMMARY_BUDGET_CHARS = MAX_CONTENT_CHARS // 2


def extractive_summary(memories: Sequence[Memory], vectors: Vector, label: str) -> str:
    """A summary made of the sources' own sentences, in event order, within `SUMMARY_BUDGET_CHARS`.

    Each memory scores centrality (cosine to the centroid) x importance x strength; the best are
    kept until the budget is spent, then re-ordered by event time so the summary reads as a story.
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
    chosen: list[int] = []
    used = len(header)
    for i in scored:
        piece = memories[i].content.strip().rstrip(".")
        if used + len(piece) + 2 > SUMMARY_BUDGET_CHARS:
            continue
        chosen.append(i)
        used += len(piece) + 2
    chosen.sort(key=lambda i: (memories[i].event_time, memories[i].id))
    return header + "; ".join(memories[i].content.strip().rstrip(".") for i in chosen) + "."
