from __future__ import annotations

import pytest

from rearview.service.search.candidates import Candidates
from rearview.service.search.factors import named_subjects, subject_of
from rearview.service.search.fusion import relative_fuse
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import RankingPolicy
from rearview.text import content_hash, estimate_tokens, normalize, query_tokens, tokens
from tests.factories import T0, make_memory


def test_normalize_makes_trivial_variants_equal() -> None:
    assert normalize("  User PREFERS\ttea.  ") == normalize("user prefers tea")
    assert content_hash("Ｔｅａ!") == content_hash("tea")


def test_tokens_split_cjk_into_bigrams() -> None:
    assert tokens("我喜欢吃苹果 and Apples") == ["我喜", "喜欢", "欢吃", "吃苹", "苹果", "and", "apples"]
    assert tokens("猫") == ["猫"]
    assert query_tokens("what is the capital") == ["capital"]
    assert query_tokens("the") == ["the"]


def test_a_possessive_is_the_name_it_belongs_to() -> None:
    # "What are Caroline's plans" must match "Caroline: ..." on the name, as OpenSearch's
    # english_possessive_stemmer would; "it's" reads as "it" (a stopword in a query).
    assert tokens("Caroline's plans, John’s team") == ["caroline", "plans", "john", "team"]
    assert query_tokens("what's it's Caroline's") == ["caroline"]
    assert tokens("don't o'clock") == ["don't", "o'clock"]


def test_token_estimate() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("苹果") == 2


def test_convex_fusion_normalizes_each_channel_by_its_best_candidate() -> None:
    policy = RankingPolicy(keyword_weight=0.6, cosine_floor=0.8)
    fused = {
        f.memory_id: f
        for f in relative_fuse([("a", 8.0), ("b", 2.0)], [("b", 0.9), ("c", 0.85), ("d", 0.7)], policy)
    }
    assert fused["a"].relevance == pytest.approx(0.6)  # best keyword match, no vector hit
    assert fused["b"].relevance == pytest.approx(0.6 * 0.25 + 0.4 * 1.0)
    assert (fused["c"].keyword_score, fused["c"].vector_score) == (0.0, pytest.approx(0.5))
    assert fused["d"].relevance == 0.0  # below the cosine floor: no relevance, still a candidate
    assert (fused["b"].keyword_rank, fused["b"].vector_rank, fused["a"].vector_rank) == (2, 1, None)


def test_a_channel_alone_carries_all_the_relevance_and_noise_carries_none() -> None:
    policy = RankingPolicy(keyword_weight=0.6, cosine_floor=0.8)
    assert relative_fuse([("a", 3.0)], None, policy)[0].relevance == pytest.approx(1.0)
    assert relative_fuse(None, [("a", 0.9)], policy)[0].relevance == pytest.approx(1.0)
    assert [f.relevance for f in relative_fuse([], [("a", 0.79), ("b", 0.75)], policy)] == [0.0, 0.0]
    assert relative_fuse([], [], policy) == []


def _ranked(query: str, contents: dict[str, str]) -> dict[str, float]:
    memories = {key: make_memory(text, memory_id=key) for key, text in contents.items()}
    hits = [(key, 1.0) for key in contents]  # equally relevant: only the subject factor differs
    ranked = rank(
        Candidates(query, T0, memories, keyword=hits, vector=None), RankingPolicy(subject_factor=0.6)
    )
    return {r.memory.id: r.factors.subject for r in ranked}


def test_a_query_naming_one_speaker_lowers_the_other_speakers_memories() -> None:
    contents = {
        "c": "Caroline: I went to the LGBTQ support group",
        "m": "Melanie: I painted a sunrise",
        "n": "The user prefers dark mode",
    }
    assert _ranked("What did Caroline do?", contents) == {"c": 1.0, "m": 0.6, "n": 1.0}
    assert _ranked("What is Caroline's identity?", contents) == {"c": 1.0, "m": 0.6, "n": 1.0}
    assert set(_ranked("When did they meet?", contents).values()) == {1.0}  # names nobody
    assert set(_ranked("Did Caroline and Melanie meet?", contents).values()) == {1.0}  # names two
    assert set(_ranked("What did Carol do?", contents).values()) == {1.0}  # whole words only


def _subject(content: str, **metadata: str | int) -> str | None:
    return subject_of(make_memory(content).model_copy(update={"metadata": metadata}))


def test_subject_is_the_speaker_prefix_else_the_metadata_speaker() -> None:
    assert _subject("Mr Smith: hello") == "mr smith"
    assert _subject("Caroline: hi") == "caroline" and _subject("caroline: hi") is None
    assert _subject("Note: the user likes tea") == "note"  # a label reads as a speaker: harmless unless named
    assert _subject("Caroline likes hiking", speaker=" Caroline ") == "caroline"  # an ingested fact
    assert _subject("Melanie: hi", speaker="Caroline") == "melanie"  # who said it wins
    assert _subject("likes hiking", speaker="") is None and _subject("likes hiking", speaker=3) is None
    assert named_subjects("what did mr smith's dog eat", ["mr smith", "smith jr"]) == ["mr smith"]


def test_a_fact_kept_under_its_speaker_is_lowered_like_the_speakers_turns() -> None:
    memories = {
        "turn": make_memory("Melanie: I love pottery", memory_id="turn"),
        "fact": make_memory("Melanie loves pottery", memory_id="fact").model_copy(
            update={"metadata": {"speaker": "Melanie"}}
        ),
        "named": make_memory("Caroline: I paint", memory_id="named"),
    }
    hits = [(key, 1.0) for key in memories]
    ranked = rank(Candidates("What does Caroline love?", T0, memories, keyword=hits, vector=None))
    lowered = {r.memory.id for r in ranked if r.factors.subject < 1}
    assert lowered == {"turn", "fact"}
