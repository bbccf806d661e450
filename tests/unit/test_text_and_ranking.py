from __future__ import annotations

import pytest

from rearview.service.ranking import reciprocal_rank_fusion
from rearview.text import content_hash, estimate_tokens, normalize, query_tokens, tokens


def test_normalize_makes_trivial_variants_equal() -> None:
    assert normalize("  User PREFERS\ttea.  ") == normalize("user prefers tea")
    assert content_hash("Ｔｅａ!") == content_hash("tea")


def test_tokens_split_cjk_into_bigrams() -> None:
    assert tokens("我喜欢吃苹果 and Apples") == ["我喜", "喜欢", "欢吃", "吃苹", "苹果", "and", "apples"]
    assert tokens("猫") == ["猫"]
    assert query_tokens("what is the capital") == ["capital"]
    assert query_tokens("the") == ["the"]


def test_token_estimate() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("苹果") == 2


def test_rrf_fuses_and_normalizes() -> None:
    fused = reciprocal_rank_fusion({"keyword": ["a", "b", "c"], "vector": ["b", "a", "d"]}, k=60)
    assert [f.memory_id for f in fused][:2] == ["a", "b"]  # tie broken by best single rank, then id
    assert fused[0].relevance == pytest.approx((1 / 61 + 1 / 62) / (2 / 61))
    assert {f.memory_id: (f.keyword_rank, f.vector_rank) for f in fused}["d"] == (None, 3)
    only = reciprocal_rank_fusion({"keyword": ["x"], "vector": []})
    assert only[0].relevance == pytest.approx(1.0)
    assert reciprocal_rank_fusion({"keyword": [], "vector": []}) == []
