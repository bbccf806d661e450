"""`relevance_fit.py` weighs each labelled set against the everyday set's total, as its docstring says."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.recall.relevance_fit import LONGMEMEVAL_SHARE, Rows, _others


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
