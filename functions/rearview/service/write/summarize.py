"""Extractive consolidation: pick the most central, important statements of a set of memories."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rearview.clock import to_iso
from rearview.limits import MAX_CONTENT_CHARS
from rearview.models import Memory
from rearview.ports import Vector

SUMMARY_BUDGET_CHARS = MAX_CONTENT_CHARS // 2
"""The most a summary's statements may take, however much its sources say."""
SUMMARY_SHARE = 0.5
"""A summary keeps at most this share of its sources' text: a consolidation, not a transcript."""
SUMMARY_FLOOR_CHARS = 200
"""...but never less room than this (a few statements), so short sessions keep their gist."""
REDUNDANT_COSINE = 0.9
"""A statement this close to one already kept says it again: left out."""
MIN_STATEMENT_WORDS = 3
"""Shorter pieces ("ok", "thanks!") are chit-chat: kept only when nothing else is."""


def summary_budget(memories: Sequence[Memory]) -> int:
    """Characters the statements of a summary of `memories` may take (`SUMMARY_SHARE` of theirs, bounded)."""
    total = sum(len(m.content) for m in memories)
    return min(SUMMARY_BUDGET_CHARS, max(SUMMARY_FLOOR_CHARS, int(total * SUMMARY_SHARE)))


def extractive_summary(memories: Sequence[Memory], vectors: Vector, label: str) -> str:
    """The salient, non-redundant statements of `memories`, in event order, within `summary_budget`.

    Each memory scores centrality (cosine to the centroid) x importance x strength; the best are
    kept while they fit the budget, skipping chit-chat (under `MIN_STATEMENT_WORDS` words) and
    statements within `REDUNDANT_COSINE` of one already kept, then re-ordered by event time so the
    summary reads as a story. The best one is always kept: when it alone is over the budget, it is
    cut at a word boundary (marked with an ellipsis), so a summary is never empty.
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    centroid = unit.mean(axis=0)
    centrality = unit @ (centroid / (float(np.linalg.norm(centroid)) or 1.0))
    scored = sorted(
        range(len(memories)),
        key=lambda i: -(float(centrality[i]) + 1) * memories[i].importance * max(memories[i].strength, 0.1),
    )
    substantial = [i for i in scored if len(memories[i].content.split()) >= MIN_STATEMENT_WORDS]
    start, end = min(m.event_time for m in memories), max(m.event_time for m in memories)
    header = f"Summary of {label} ({to_iso(start)[:10]} to {to_iso(end)[:10]}, {len(memories)} memories): "
    budget = len(header) + summary_budget(memories)
    chosen: dict[int, str] = {}
    used = len(header) + 1  # the final period
    for i in substantial or scored:
        piece = memories[i].content.strip().rstrip(".")
        if any(float(unit[i] @ unit[j]) >= REDUNDANT_COSINE for j in chosen):
            continue
        room = budget - used - (2 if chosen else 0)
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
