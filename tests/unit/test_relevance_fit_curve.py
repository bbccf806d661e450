"""`relevance_fit.operating_curve` prints, per mode, the held-out figures each knob value gives: the
shipped point's cells are `held_out`'s own figures, and a kind with no question prints "-"."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.recall.everyday_recall import Labelled
from benchmarks.recall.relevance_fit import FLOOR_CURVE, MARKING_CURVE, held_out, operating_curve

from rearview.service.search.ranking_policy import DEFAULT_RANKING, with_learned_relevance
from rearview.service.search.relevance import shipped_model
from tests.factories import package_manager_candidates


def _asked(group: str) -> list[Labelled]:
    answer = frozenset({"pnpm"})
    return [
        Labelled(group, "paraphrase", "en", answer, answer, package_manager_candidates()),
        Labelled(
            group,
            "nothing",
            "en",
            frozenset(),
            frozenset(),
            package_manager_candidates(query="What is the user's favourite film?"),
        ),
    ]


def test_each_mode_prints_every_knob_value_and_the_shipped_cells_are_held_outs() -> None:
    base = with_learned_relevance(DEFAULT_RANKING)
    folds = [("u1", shipped_model()), ("u2", shipped_model())]
    modes = {"without": _asked("u1") + _asked("u2"), "with": _asked("u1")}
    out = operating_curve(folds, base, modes)
    lines = out.splitlines()
    assert sum(line.lstrip().startswith("without") for line in lines) == 2
    assert sum(line.lstrip().startswith("with ") for line in lines) == 2
    for at in MARKING_CURVE:
        assert f"{at:.2f}: " in out
    for keep in FLOOR_CURVE:
        assert f"{keep}: " in out
    shipped = held_out(folds, replace(base, relevant_at=0.5), modes["without"])
    cell = (
        f"0.50: {shipped['nothing']['none relevant']:.3f}/{shipped['all']['marked']:.3f}"
        f"/{shipped['all']['precision']:.3f}"
    )
    assert cell in lines[1]
    assert lines[-1].endswith("/-]")  # no cross-lingual question: plain cosine has no figure for it
