"""`coverage.spread_sessions`: the first places of a ranking shared among sessions, with back-off."""

from __future__ import annotations

from rearview.service.search.candidates import Factors, Fused, Ranked
from rearview.service.search.coverage import spread_sessions
from rearview.service.search.ranking_policy import RankingPolicy
from tests.factories import make_memory

NEUTRAL = Factors(1.0, 1.0, 1.0, 1.0)


def _ranked(*hits: tuple[str, str | None, float]) -> list[Ranked]:
    """(memory id, session, score) best first."""
    return [
        Ranked(make_memory(memory_id=i, session_id=s), score, Fused(i, score), NEUTRAL)
        for i, s, score in hits
    ]


def _ids(ranked: list[Ranked]) -> list[str]:
    return [r.memory.id for r in ranked]


CROWDED = _ranked(
    ("a1", "A", 0.90), ("a2", "A", 0.88), ("a3", "A", 0.86), ("a4", "A", 0.84),
    ("b1", "B", 0.80), ("c1", "C", 0.70), ("a5", "A", 0.60),
)  # fmt: skip


def test_off_keeps_the_score_order() -> None:
    assert _ids(spread_sessions(CROWDED, RankingPolicy(session_cap=0))) == _ids(CROWDED)


def test_a_session_holding_its_cap_waits_for_the_other_sessions_strong_matches() -> None:
    policy = RankingPolicy(session_cap=2, spread_window=5, spread_share=0.5)
    assert _ids(spread_sessions(CROWDED, policy)) == ["a1", "a2", "b1", "c1", "a3", "a4", "a5"]


def test_back_off_a_weak_match_of_another_session_never_jumps_a_strong_one() -> None:
    policy = RankingPolicy(session_cap=1, spread_window=5, spread_share=0.9)
    # b1 (0.80) is within 0.9 of a2's 0.88; c1 (0.70) is not within 0.9 of a2's: a2 comes back first
    assert _ids(spread_sessions(CROWDED, policy)) == ["a1", "b1", "a2", "a3", "a4", "c1", "a5"]


def test_past_the_window_the_score_order_is_kept() -> None:
    policy = RankingPolicy(session_cap=1, spread_window=2, spread_share=0.5)
    assert _ids(spread_sessions(CROWDED, policy)) == ["a1", "b1", "a2", "a3", "a4", "c1", "a5"]


def test_memories_without_a_session_are_never_held_back() -> None:
    ranked = _ranked(("x1", None, 0.9), ("x2", None, 0.85), ("a1", "A", 0.8), ("a2", "A", 0.79))
    policy = RankingPolicy(session_cap=1, spread_window=4, spread_share=0.5)
    assert _ids(spread_sessions(ranked, policy)) == ["x1", "x2", "a1", "a2"]


def test_scores_are_untouched() -> None:
    policy = RankingPolicy(session_cap=1, spread_window=5, spread_share=0.5)
    spread = spread_sessions(CROWDED, policy)
    assert {r.memory.id: r.score for r in spread} == {r.memory.id: r.score for r in CROWDED}
