"""`admission.leads`: which standalone weak matches a search still returns (issue 44's precision)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from rearview.models import MemoryStatus
from rearview.service.search.admission import leads
from rearview.service.search.candidates import Candidates, Factors, Fused, Ranked
from rearview.service.search.ranking_policy import DEFAULT_RANKING
from tests.factories import make_memory

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
POLICY = replace(DEFAULT_RANKING, relevant_at=0.5, lead_places=3, lead_gap=0.04, confident_at=0.9)


def _search(
    rows: list[tuple[str, str, float, float | None]], **memory: object
) -> tuple[list[Ranked], Candidates]:
    """(id, content, relevance, cosine or None) best first -> the kept list and its candidates."""
    memories = {i: make_memory(text, memory_id=i, at=NOW, **memory.get(i, {})) for i, text, _, _ in rows}  # type: ignore[arg-type]
    kept = [Ranked(memories[i], p, Fused(i, p), Factors(1, 1, 1, 1)) for i, _, p, _ in rows]
    vector = [(i, c) for i, _, _, c in rows if c is not None]
    return kept, Candidates(query="q", now=NOW, memories=memories, vector=vector)


def _ids(kept: list[Ranked]) -> list[str]:
    return [r.memory.id for r in kept]


def test_behind_a_sure_answer_no_standalone_weak_match_is_returned() -> None:
    kept, candidates = _search(
        [
            ("a", "I live in Lisbon.", 0.95, 0.90),
            ("b", "I like tea.", 0.3, 0.89),
            ("c", "Walk the dog.", 0.6, 0.85),
        ]
    )
    assert _ids(leads(kept, candidates, POLICY)) == ["a", "c"]  # c is likely itself: never touched


def test_only_a_sure_first_result_ends_the_leads() -> None:
    """A sure match the similarity floor placed below a weak first one does not drop that first one."""
    kept, candidates = _search([("a", "I use pnpm.", 0.01, 0.80), ("b", "我打羽毛球。", 0.95, 0.87)])
    assert _ids(leads(kept, candidates, POLICY)) == ["a", "b"]


def test_unsure_a_weak_match_is_a_lead_only_in_the_first_places_and_near_the_nearest_memory() -> None:
    kept, candidates = _search(
        [
            ("a", "I live in Lisbon.", 0.45, 0.90),
            ("b", "I like tea.", 0.40, 0.87),  # within 0.04 of the nearest
            ("c", "Walk the dog.", 0.35, 0.84),  # 0.06 below it: no lead
            ("d", "The car is blue.", 0.30, 0.895),  # near, but past the third place
        ]
    )
    assert _ids(leads(kept, candidates, POLICY)) == ["a", "b"]


def test_the_gap_is_measured_in_the_memorys_own_script() -> None:
    kept, candidates = _search(
        [
            ("a", "I live in Lisbon.", 0.45, 0.90),
            ("b", "我住在里斯本。", 0.40, 0.83),
            ("c", "猫叫咪咪。", 0.3, 0.70),
        ]
    )
    # b is the nearest Chinese memory: a cross-lingual lead is not judged against English cosines
    assert _ids(leads(kept, candidates, POLICY)) == ["a", "b"]


def test_a_sessions_turns_and_archived_memories_are_always_kept() -> None:
    rows = [
        ("a", "I live in Lisbon.", 0.95, 0.90),
        ("t", "Caroline: I went hiking.", 0.02, 0.80),
        ("z", "Old note.", 0.2, None),
    ]
    kept, candidates = _search(rows, t={"session_id": "s1"}, z={"status": MemoryStatus.ARCHIVED})
    assert _ids(leads(kept, candidates, POLICY)) == ["a", "t", "z"]


def test_a_weak_match_without_vector_evidence_is_no_lead_and_off_keeps_everything() -> None:
    kept, candidates = _search([("a", "I live in Lisbon.", 0.45, 0.90), ("k", "Lisbon trip.", 0.4, None)])
    assert _ids(leads(kept, candidates, POLICY)) == ["a"]
    assert _ids(leads(kept, candidates, replace(POLICY, lead_places=0))) == ["a", "k"]
