"""How a search's phrasings (the query and the agent's alternatives) are fused into one relevance.

An answer matches every wording of the question, noise one of them (`phrasing_agreement`). The
query floor (`query_floor`, measured by `long_history_recall.py`, off as shipped) lets the
alternatives lift what the query misses without sinking what the query found and they find too:
the answer a single-fact question's own wording ranks tenth stays there when an alternative worded
as a fragment prefers the turn beside it (LongMemEval development, issue 48), while the query's
noise, which no alternative finds, still sinks.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rearview.service.search.candidates import Candidates, Phrasing
from rearview.service.search.fusion import calibrated_fuse
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy, with_learned_relevance
from tests.factories import T0, make_memory

_CONTENTS = {
    "answer": "user: a new collar for Max, my golden retriever",
    "beside": "assistant: the Kong toy is a fine choice for Max",
    "other": "assistant: a dog walker can help on busy days",
    "noise": "assistant: a yellow sundress for the brunch",
}


def _candidates() -> Candidates:
    memories = {i: make_memory(content, memory_id=i) for i, content in _CONTENTS.items()}
    return Candidates(
        "what breed is my dog?", T0, memories, keyword=[],
        vector=[("answer", 0.90), ("beside", 0.89), ("noise", 0.89)],
        alternatives=(
            Phrasing("my dog is a", keyword=[], vector=[("beside", 0.95), ("other", 0.93), ("answer", 0.82)]),
            Phrasing("my dog's breed", keyword=[], vector=[("beside", 0.94), ("answer", 0.93), ("noise", 0.7)]),
        ),
    )  # fmt: skip


def _relevance(candidates: Candidates, policy: RankingPolicy) -> dict[str, float]:
    return {f.memory_id: f.relevance for f in calibrated_fuse(candidates, policy)}


def test_the_alternatives_never_sink_what_the_query_found_and_they_find_too() -> None:
    policy = replace(with_learned_relevance(DEFAULT_RANKING), query_floor=1.0)
    alone = _relevance(replace(_candidates(), alternatives=()), policy)
    helped = _relevance(_candidates(), policy)
    assert helped["answer"] >= alone["answer"] and helped["beside"] >= alone["beside"]
    assert helped["answer"] > helped["beside"]  # the query's best stays first, as without them
    assert helped["noise"] < alone["noise"] / 2  # found by the query alone: it sinks by the mean
    assert helped["other"] > 0.0  # what only an alternative found joins, lifted by it


@pytest.mark.parametrize("floor", [0.0, 0.5, 1.0])
def test_the_floor_is_the_querys_own_relevance_times_the_share_of_alternatives_finding_it(
    floor: float,
) -> None:
    policy = replace(DEFAULT_RANKING, phrasing_agreement=1.0, query_floor=floor)
    alone = _relevance(replace(_candidates(), alternatives=()), policy)
    mean = _relevance(_candidates(), replace(policy, query_floor=0.0))
    helped = _relevance(_candidates(), policy)
    share = {"answer": 1.0, "beside": 1.0, "noise": 0.0, "other": 0.5}
    assert max(alone.values()) < policy.relevant_at  # under the cap: the floor is the whole share
    for i in _CONTENTS:
        assert helped[i] == pytest.approx(max(mean[i], floor * alone.get(i, 0.0) * share[i]))
    assert mean["answer"] < alone["answer"]  # the plain mean sinks it: what the floor is for


def test_the_floor_never_makes_a_likely_answer_the_mean_does_not() -> None:
    policy = replace(with_learned_relevance(DEFAULT_RANKING), relevant_at=0.3, query_floor=1.0)
    alone = _relevance(replace(_candidates(), alternatives=()), policy)
    mean = _relevance(_candidates(), replace(policy, query_floor=0.0))
    helped = _relevance(_candidates(), policy)
    assert alone["answer"] >= policy.relevant_at > mean["answer"]  # likely alone, not by the mean
    assert mean["answer"] < helped["answer"] < policy.relevant_at  # kept up, just under the mark
