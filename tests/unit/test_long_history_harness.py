"""benchmarks/recall/long_history_recall.py: the leave-half-out split and its pick."""

from __future__ import annotations

from benchmarks.recall.long_history_recall import Rows, halves, leave_half_out, served_config

from rearview.bootstrap import build_config
from rearview.config.settings import Settings


def _rows(all_at_10: dict[str, float]) -> Rows:
    return [
        (qid, "multi-session" if qid.startswith("m") else "single-session-user", {"recall_all@10": v})
        for qid, v in all_at_10.items()
    ]


IDS = [f"m{i}" for i in range(6)] + [f"s{i}" for i in range(4)]


def test_halves_split_each_type_in_two_disjoint_halves() -> None:
    a, b = halves(_rows(dict.fromkeys(IDS, 1.0)))
    assert {r[0] for r in a} | {r[0] for r in b} == set(IDS)
    assert not {r[0] for r in a} & {r[0] for r in b}
    for kind in ("multi-session", "single-session-user"):
        assert sum(r[1] == kind for r in a) == sum(r[1] == kind for r in b)


def test_each_half_picks_on_itself_and_is_scored_on_the_other() -> None:
    before = _rows(dict.fromkeys(IDS, 0.0) | {f"s{i}": 1.0 for i in range(4)})
    better = _rows(dict.fromkeys(IDS, 1.0))
    loses_single = _rows(dict.fromkeys(IDS, 1.0) | {f"s{i}": 0.0 for i in range(4)})
    lines = leave_half_out({"before": before, "better": better, "loses single": loses_single})
    assert [line.split()[2] for line in lines[1:]] == ["better", "better"]
    assert all(line.split()[-3:] == ["1.000", "0.400", "1.000"] for line in lines[1:])


def test_the_benchmark_ranks_as_rearview_serve_is_configured() -> None:
    served = build_config(Settings(embedder="onnx"))
    config = served_config("onnx")
    assert config.ranking == served.ranking
    assert config.near_duplicate_threshold == served.near_duplicate_threshold
