"""long_history_recall.py and its tables: the leave-half-out split and its pick, and `--alternatives`."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.recall.long_history_recall import ask, load_alternatives, served_config, write_haystack
from benchmarks.recall.long_history_tables import Rows, halves, leave_half_out, per_half
from benchmarks.recall.longmemeval_recall import Haystack, Turn

from rearview.bootstrap import build_config
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.service.config import ServiceConfig
from rearview.service.search.ranking_policy import DEFAULT_RANKING
from tests.factories import T0


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
    assert config.query_view == served.query_view > 0


def _pets() -> Haystack:
    said = [
        "user: I adopted a kitten named Miso last spring",
        "user: my parrot Kiwi whistles the news theme",
        *(f"user: the {dish} recipe needs {n} eggs" for n, dish in enumerate(["cake", "flan", "quiche"] * 3)),
    ]
    turns = [Turn(f"s{n}#0", f"s{n}", text, T0) for n, text in enumerate(said)]
    return Haystack(
        "q", "multi-session", "How many pets do I have?", T0, turns, ("s0#0", "s1#0"), ("s0", "s1")
    )


def test_a_question_is_asked_with_its_alternatives_as_memory_search_takes_them() -> None:
    written = write_haystack(_pets(), HashingEmbedder(64), ServiceConfig(ranking=DEFAULT_RANKING))
    alone = ask(written, DEFAULT_RANKING)
    helped = ask(written, DEFAULT_RANKING, ["adopted a kitten", "my parrot whistles"])
    assert alone["recall_all@10"] == 0.0  # "pets" is in neither piece
    assert helped["recall_all@10"] == 1.0
    assert helped["session_recall@5"] == 1.0


def test_alternatives_are_read_as_question_id_to_phrasings(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"q": ["adopted a kitten", "my parrot"]}', encoding="utf-8")
    assert load_alternatives(good) == {"q": ["adopted a kitten", "my parrot"]}
    bad = tmp_path / "bad.json"
    bad.write_text('{"q": "adopted a kitten"}', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"bad\.json"):
        load_alternatives(bad)


def test_per_half_scores_each_choice_on_each_half() -> None:
    rows = _rows(dict.fromkeys(IDS, 1.0))
    lines = per_half({"after": rows, "after +alt": rows})
    assert lines[1].split()[-6:] == ["1.000"] * 6
    assert lines[2].startswith("after +alt")
