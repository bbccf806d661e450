"""Extractive consolidation: pick the statements of a set of memories that carry its facts.

The offline summary (no language model, no agent's own text) keeps what was *stated*: a decision,
a number, a name, a date, a plan, over an acknowledgement ("Okay, noted", "No, that's all.
Thanks!", "You're welcome") however central it is to the session's vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rearview.limits import MAX_CONTENT_CHARS
from rearview.models import Memory
from rearview.ports import Vector
from rearview.shared.clock import to_iso

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

_ACKNOWLEDGEMENT = re.compile(
    r"^\W*(?:ok(?:ay)?|sure|noted|got it|great|thanks?(?: you)?|thank you|you'?re welcome|no problem|"
    r"sounds good|perfect|cool|alright|all right|no,? that'?s all|that'?s all|yes|yep|no|bye|good luck|"
    r"cheers|happy to help|glad to help|anytime)\b",
    re.IGNORECASE,
)
ACKNOWLEDGEMENT_MAX_WORDS = 10
"""A statement this short that opens with an acknowledgement and carries no fact says nothing to keep."""
_FACT_SIGNALS = (
    re.compile(r"\d"),  # numbers, versions, dates, amounts
    re.compile(r"(?<![.!?:]\s)(?<!^)\b(?!I\b|I['’])[A-Z][\w'’-]+"),  # a name or product mid-sentence
    re.compile(
        r"\b(?:decid|agree|chose|choos|plan|will\b|going to|roll ?back|deadline|due\b|because|must|should|"
        r"never|always|prefer|owner|responsible|budget|risk|if\b)\w*",
        re.IGNORECASE,
    ),
)
FACT_WEIGHT = 0.5
"""Each kind of fact signal a statement carries multiplies its score by 1 + this."""
DENSE_SIGNALS = 2
"""A statement with this many kinds of fact (a number and a name, a decision with a date) is
never left out for the budget's sake: the budget grows to hold them all (up to
`SUMMARY_BUDGET_CHARS`); a session's decisions are what its summary is for."""
QUESTION_FACTOR = 0.5
"""A question asks; it states nothing: its score is scaled by this."""


def is_acknowledgement(text: str) -> bool:
    """Whether `text` is an acknowledgement or pleasantry rather than a statement of fact."""
    return (
        len(text.split()) <= ACKNOWLEDGEMENT_MAX_WORDS
        and _ACKNOWLEDGEMENT.match(text) is not None
        and not fact_signals(text)
    )


def fact_signals(text: str) -> int:
    """How many kinds of fact (a number, a name, a decision or plan word) `text` carries, 0-3."""
    return sum(1 for pattern in _FACT_SIGNALS if pattern.search(text))


def summary_budget(memories: Sequence[Memory]) -> int:
    """Characters the statements of a summary of `memories` may take (`SUMMARY_SHARE` of theirs, bounded)."""
    total = sum(len(m.content) for m in memories)
    return min(SUMMARY_BUDGET_CHARS, max(SUMMARY_FLOOR_CHARS, int(total * SUMMARY_SHARE)))


def extractive_summary(memories: Sequence[Memory], vectors: Vector, label: str) -> str:
    """The salient, non-redundant statements of `memories`, in event order, within `summary_budget`.

    Each memory scores centrality (cosine to the centroid) x importance x strength x the facts it
    carries (`fact_signals`; a question counts half); the best are kept while they fit the budget
    (grown to hold every `DENSE_SIGNALS` statement), skipping chit-chat
    (under `MIN_STATEMENT_WORDS` words, or an acknowledgement) and statements within
    `REDUNDANT_COSINE` of one already kept, then re-ordered by event time so the summary reads as a
    story. The header says how many of the sources it quotes. The best one is always kept: when it
    alone is over the budget, it is cut at a word boundary (marked with an ellipsis), so a summary
    is never empty.
    """
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    centroid = unit.mean(axis=0)
    centrality = unit @ (centroid / (float(np.linalg.norm(centroid)) or 1.0))
    scored = sorted(
        range(len(memories)),
        key=lambda i: (
            -(float(centrality[i]) + 1)
            * memories[i].importance
            * max(memories[i].strength, 0.1)
            * (1 + FACT_WEIGHT * fact_signals(memories[i].content))
            * (QUESTION_FACTOR if memories[i].content.rstrip().endswith(("?", "？")) else 1.0)
        ),
    )
    substantial = [
        i
        for i in scored
        if len(memories[i].content.split()) >= MIN_STATEMENT_WORDS
        and not is_acknowledgement(memories[i].content)
    ]
    start, end = min(m.event_time for m in memories), max(m.event_time for m in memories)
    span = f"{to_iso(start)[:10]} to {to_iso(end)[:10]}"
    longest = f"Summary of {label} ({span}, {len(memories)} of {len(memories)} memories quoted): "
    dense = sum(len(m.content) + 2 for m in memories if fact_signals(m.content) >= DENSE_SIGNALS)
    budget = len(longest) + max(summary_budget(memories), min(dense, SUMMARY_BUDGET_CHARS))
    chosen: dict[int, str] = {}
    used = len(longest) + 1  # the final period
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
    quoted = (
        f"{len(chosen)} of {len(memories)} memories quoted"
        if len(chosen) < len(memories)
        else (f"{len(memories)} memories")
    )
    return f"Summary of {label} ({span}, {quoted}): " + "; ".join(chosen[i] for i in order) + "."


def clip(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, at the last word boundary, ending with an ellipsis."""
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    head = cut.rsplit(None, 1)[0] if " " in cut.strip() else cut
    return head.rstrip(" ,;:") + "\u2026"
