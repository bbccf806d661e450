"""`relevance_fit.py` weighs each labelled set against the everyday set's total, as its docstring says,
and scores LongMemEval's questions by every evidence memory in the first ten."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.recall.longmemeval_candidates import Question
from benchmarks.recall.relevance_fit import LONGMEMEVAL_SHARE, Rows, _others, longmemeval_all_at_10

from rearview.service.search.ranking_policy import DEFAULT_RANKING, with_learned_relevance
from tests.factories import package_manager_candidates


def _rows(n: int) -> Rows:
    return Rows(np.zeros((n, 3)), np.zeros(n), np.ones(n))


def test_locomo_weighs_as_much_as_everyday_and_longmemeval_its_share() -> None:
    everyday, locomo, longmemeval = _others(_rows(1000), _rows(4000), _rows(250))
    assert everyday.weight.sum() == 1000
    assert locomo.weight.sum() == pytest.approx(1000)
    assert longmemeval.weight.sum() == pytest.approx(LONGMEMEVAL_SHARE * 1000)


def test_a_set_not_given_is_left_out() -> None:
    assert len(_others(_rows(10), None, None)) == 1
    assert len(_others(_rows(10), None, _rows(5))) == 2


def test_a_longmemeval_question_counts_only_when_every_piece_is_returned_in_the_first_ten() -> None:
    policy = with_learned_relevance(DEFAULT_RANKING)
    found = Question("q1", "single-session-user", 0, ("pnpm",), package_manager_candidates())
    assert longmemeval_all_at_10([found], policy) == 1.0
    cut = Question(
        "q2", "multi-session", 1, ("pnpm", "cat"), package_manager_candidates()
    )  # a weak match behind a sure one
    assert longmemeval_all_at_10([found, cut], policy) == 0.5
