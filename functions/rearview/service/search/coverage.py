"""Coverage: an answer in several pieces kept whole, its pieces' sessions sharing the first places.

An answer spread over many sessions ("how many graduations did I attend?") has one piece in each,
while the session that matched best also holds the turns around its piece: the reply to it, the
follow-up, each about the same topic and each ranked near it. Left in score order, those turns take
the first places, and the other sessions' pieces rank below them (LongMemEval's multi-session
questions: one piece in the first ten always, every piece rarely).

For a question asking for several facts (`asks_for_several`, below), `spread_sessions` walks the
ranking best first and fills the first `spread_window` places; a memory whose session already holds
`session_cap` of them waits, unless no memory of another
session is left within `spread_share` of its score (the back-off: a weak match never jumps ahead of
a strong one). Memories without a session are never held back. Past the window, and for whatever
waited, the score order is kept. Scores are untouched: only the order changes, as `similarity_floor`
changes it, so `why` still reproduces each score.

A question that asks for several facts ("how many ...", "in total", "which came first, A or B")
is answered by every piece, and a piece can match less well than the best one (it shares fewer of
the question's words): the admission's relative floor (`RankingPolicy.relative_relevance`), which
drops the tail behind a likely answer, would drop it. `for_query` gives such a question
`several_relative_relevance` instead, and the session cap; any other question neither (its answer is
one piece, and the turns around it in its session are what explains it). `asks_for_several` is English
and Chinese word rules; a phrasing they miss keeps the ranking every question gets.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from rearview.service.search.candidates import Ranked
from rearview.service.search.ranking_policy import RankingPolicy

__all__ = ["asks_for_several", "for_query", "spread_sessions"]

_SEVERAL = re.compile(
    r"\bhow\s+(?:many|much|often)\b|\b(?:in\s+)?total\b|\baltogether\b|\bcombined\b|\bsum\s+of\b"
    r"|\b(?:all|each|every\s+one)\s+of\b|\ball\s+the\b|\bboth\b|\blist\b"
    r"|\b(?:first|earlier|later|last|most\s+recently)\s*,?\s+(?:the\s+)?[^?]*\bor\b|\border\s+of\b"
    r"|\bbetween\s+the\b|\bhow\s+long\b|\bthe\s+(?:two|three|four|five|several)\b"
    r"|多少|几[个次天]|一共|总共|总计|哪些|所有|先后",
    re.IGNORECASE,
)


@lru_cache(maxsize=1024)
def asks_for_several(query: str) -> bool:
    """Whether the question's answer is in several facts: a count, a total, a list, an order."""
    return _SEVERAL.search(query) is not None


def for_query(query: str, policy: RankingPolicy) -> RankingPolicy:
    """`policy` as it applies to `query`.

    A several-facts question: `several_relative_relevance` as the relative floor (when lower), and
    `session_cap`. Any other: no session cap (its answer is one piece).
    """
    if asks_for_several(query):
        floor = min(policy.relative_relevance, policy.several_relative_relevance)
        return policy if floor == policy.relative_relevance else replace(policy, relative_relevance=floor)
    return replace(policy, session_cap=0) if policy.session_cap else policy


def spread_sessions(ranked: Sequence[Ranked], policy: RankingPolicy) -> list[Ranked]:
    """`ranked` (best first) with its first `spread_window` places spread over sessions (module docstring).

    Pure and stable: with `session_cap` 0, or fewer than two sessions among the window's
    candidates, the order is `ranked`'s.
    """
    cap, window = policy.session_cap, policy.spread_window
    if cap <= 0 or window <= 0 or len(ranked) <= cap:
        return list(ranked)
    rest = list(ranked)
    out: list[Ranked] = []
    held: Counter[str] = Counter()
    while rest and len(out) < window:
        head = rest[0]
        floor = policy.spread_share * head.score
        pick = next(
            (
                n
                for n, r in enumerate(rest)
                if r.score >= floor and (r.memory.session_id is None or held[r.memory.session_id] < cap)
            ),
            0,
        )
        chosen = rest.pop(pick)
        if chosen.memory.session_id is not None:
            held[chosen.memory.session_id] += 1
        out.append(chosen)
    return out + rest
