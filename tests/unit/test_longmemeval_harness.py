"""benchmarks/recall/longmemeval_recall.py: the metric code, and the harness end to end on a tiny fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.recall.longmemeval_recall import ask, load, session_recall, summarize, turn_recall

from rearview.embedders.hashing import HashingEmbedder

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "longmemeval_tiny.json"


def test_turn_recall_any_and_all() -> None:
    ranked = ["x", "e1", "y", "z", "w", "e2"]
    got = turn_recall(ranked, ["e1", "e2"], ks=(1, 5, 6))
    assert got == {
        "recall_any@1": 0.0, "recall_all@1": 0.0,
        "recall_any@5": 1.0, "recall_all@5": 0.0,
        "recall_any@6": 1.0, "recall_all@6": 1.0,
    }  # fmt: skip


def test_session_recall_counts_distinct_sessions_in_order_of_first_appearance() -> None:
    ranked = ["s1", "s1", "s2", "s1", "s3", "s4"]  # sessions of the ranked turns
    assert session_recall(ranked, ["s3", "s4"], ks=(2, 3, 4)) == {
        "session_recall@2": 0.0,
        "session_recall@3": 0.5,
        "session_recall@4": 1.0,
    }


def test_the_fixture_loads_evidence_turns_and_leaves_out_abstention_questions() -> None:
    haystacks, notes = load(FIXTURE)
    assert [h.question_id for h in haystacks] == ["q1", "q2"]
    assert notes == {"questions without has_answer turns (abstention)": 1}
    assert haystacks[1].evidence_turns == ("t-a#0", "t-c#0")
    assert haystacks[1].evidence_sessions == ("t-a", "t-c")
    assert haystacks[0].turns[2].content.startswith("user: My dog is a beagle")
    assert (
        haystacks[0].asked_at is not None and haystacks[0].asked_at.isoformat() == "2023-06-01T10:00:00+00:00"
    )


def test_the_harness_finds_the_evidence_of_a_tiny_haystack() -> None:
    haystacks, _ = load(FIXTURE)
    rows = [(h.question_type, ask(h, HashingEmbedder(256))) for h in haystacks]
    q1 = rows[0][1]
    assert q1["recall_all@5"] == 1.0 and q1["session_recall@5"] == 1.0  # 6 turns: all within 50
    summary = summarize(rows)
    assert summary["overall"]["n"] == 2 and summary["multi-session"]["recall_all@50"] == 1.0
    assert 0.0 <= summary["overall"]["recall_any@5"] <= 1.0
    assert summary["overall"]["recall_all@50"] == pytest.approx(1.0)
