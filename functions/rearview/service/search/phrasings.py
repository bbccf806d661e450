"""When the agent's alternatives are searched: only where the query alone finds no sure answer.

Each alternative is one more e5 pass and one more search of both channels: with two, a search costs
about twice the CPU of the query alone (`benchmarks/speed/concurrent_search.py --alternatives 0,2`).
Where the query alone already finds a sure answer (its best match's relevance at least
`RankingPolicy.alternatives_unless`), the alternatives change little but the cost: held out by user
on the everyday set with the agent's help, skipping them there skips half the searches' alternatives
and loses no answer from the first three, while precision rises (an alternative's weak matches stay
out). A question asking for several facts (`coverage.asks_for_several`) always searches them: the
agent splits such a question into its parts, and one part found surely is not the others.

`Searcher.search` asks the query alone first and decides with `alternatives_needed`;
`returned_as_searched` replays the same rule on candidates that hold every phrasing's hits
(benchmarks re-ranking cached candidates).
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.service.search.candidates import Candidates, Ranked
from rearview.service.search.coverage import asks_for_several
from rearview.service.search.ranking import returned
from rearview.service.search.ranking_policy import RankingPolicy

__all__ = ["alternatives_needed", "as_searched", "returned_as_searched"]


def alternatives_needed(query: str, alone: Sequence[Ranked], policy: RankingPolicy) -> bool:
    """Whether a search must also search its alternatives, given what the query alone returns."""
    if asks_for_several(query):
        return True
    return not alone or alone[0].fused.relevance < policy.alternatives_unless


def returned_as_searched(candidates: Candidates, policy: RankingPolicy) -> list[Ranked]:
    """`ranking.returned` as `Searcher.search` applies it (`alternatives_needed`)."""
    return as_searched(candidates, policy)[0]


def as_searched(candidates: Candidates, policy: RankingPolicy) -> tuple[list[Ranked], bool]:
    """`returned_as_searched`, and whether the search would have searched the alternatives.

    Replayed on candidates collected with every phrasing (`Searcher.candidates`), the query alone
    keeps the second hop's hits that every phrasing's best matches seeded; the search asks the hop
    from the query's own.
    """
    if not candidates.alternatives:
        return returned(candidates, policy), False
    alone = returned(candidates.asked_as(0), policy)
    if alternatives_needed(candidates.query, alone, policy):
        return returned(candidates, policy), True
    return alone, False
