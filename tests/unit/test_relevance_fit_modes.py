"""`relevance_fit.py` reads one cache per help mode, named as `everyday_recall.py --help-mode both` writes them."""

from __future__ import annotations

from pathlib import Path

from benchmarks.recall.relevance_fit import mode_of


def test_the_two_caches_of_a_run_are_two_modes() -> None:
    """`Path.stem` gave `everyday.pkl` for both, so the second replaced the first and no side-by-side printed."""
    assert {mode_of(Path("r/everyday.pkl.without")), mode_of(Path("r/everyday.pkl.with"))} == {
        "without",
        "with",
    }
    assert mode_of(Path("r/labelled.pkl")) == "labelled"
