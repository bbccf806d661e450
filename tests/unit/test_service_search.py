"""The search path: hybrid fusion, filters, re-rank, reinforcement, degradation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError
from rearview.models import MemoryFilter, MemoryType, SearchRequest, WriteRequest
from rearview.ports import MemoryIndex, Vector
from rearview.service.memory_service import MemoryService
from rearview.service.search.ranking_policy import DEFAULT_RANKING
from rearview.service.search.rendering import CONFLICT_RULE
from rearview.shared.clock import ManualClock
from rearview.testing import BrokenEmbedder, UnavailableIndex


def _seed(service: MemoryService) -> dict[str, str]:
    ids = {}
    for key, content, kind in [
        ("tea", "The user drinks green tea every morning", MemoryType.SEMANTIC),
        ("deploy", "Deploy failed because migrations ran after the app started", MemoryType.PROCEDURAL),
        ("trip", "The user flew to Lisbon for a conference in May", MemoryType.EPISODIC),
    ]:
        ids[key] = service.write("t1", WriteRequest(content=content, type=kind, tags=[key])).memory.id
    return ids


def test_hybrid_search_returns_context_block_and_tokens(service: MemoryService) -> None:
    ids = _seed(service)
    result = service.search("t1", SearchRequest(query="what tea does the user drink?", top_k=2))
    assert result.results[0].id == ids["tea"]
    assert result.results[0].keyword_rank == 1 and result.results[0].vector_rank == 1
    assert len(result.results) <= 2
    assert result.context.startswith("<memories>") and CONFLICT_RULE in result.context
    assert '| semantic | confidence 1.00 | 2026-01-01 | tool write by agent "default": ' in result.context
    assert result.token_estimate > 10 and not result.degraded


def test_filters_apply_inside_the_query(service: MemoryService) -> None:
    ids = _seed(service)
    flt = MemoryFilter(types=(MemoryType.PROCEDURAL,))
    result = service.search("t1", SearchRequest(query="user tea Lisbon deploy", filter=flt))
    assert [h.id for h in result.results] == [ids["deploy"]]
    assert service.search("t2", SearchRequest(query="tea")).results == []


def test_importance_breaks_ties_between_equally_relevant_memories(service: MemoryService) -> None:
    low = service.write("t1", WriteRequest(content="Project codename is Falcon", importance=1, tags=["x"]))
    high = service.write(
        "t1",
        WriteRequest(
            content="Project codename is Falcon!", importance=5, tags=["y"], type=MemoryType.EPISODIC
        ),
    )
    result = service.search("t1", SearchRequest(query="project codename Falcon"))
    assert [h.id for h in result.results][:2] == [high.memory.id, low.memory.id]


def test_recall_reinforces_strength_and_access(service: MemoryService, clock: ManualClock) -> None:
    ids = _seed(service)
    clock.advance(days=1)
    decayed = service.get("t1", ids["tea"]).strength
    service.search("t1", SearchRequest(query="green tea"))
    tea = service.get("t1", ids["tea"])
    assert decayed < 1.0
    assert (
        tea.strength == pytest.approx(decayed + 0.1)
        and tea.access_count == 1
        and tea.last_accessed_at == clock.now()
    )
    service.search("t1", SearchRequest(query="green tea", reinforce=False))
    assert service.get("t1", ids["tea"]).access_count == 1


def test_top_k_and_min_score_are_validated(service: MemoryService) -> None:
    for bad, field in [
        ({"top_k": 10_000}, "top_k"),
        ({"top_k": 0}, "top_k"),
        ({"min_score": -1}, "min_score"),
    ]:
        with pytest.raises(InvalidInputError) as exc:
            service.search("t1", SearchRequest.model_validate({"query": "x", **bad}))
        assert exc.value.field == field
    with pytest.raises(InvalidInputError):
        service.search("t1", SearchRequest(query="  "))


def test_min_score_drops_weak_results(service: MemoryService) -> None:
    _seed(service)
    assert service.search("t1", SearchRequest(query="tea", min_score=5.0)).results == []


def test_index_down_degrades_to_store_and_writes_still_land(service: MemoryService) -> None:
    ids = _seed(service)
    down = MemoryService(service.store, UnavailableIndex(), service.embedder, service.clock)
    written = down.write("t1", WriteRequest(content="The user owns a black cat named Miso"))
    assert written.indexed is False
    assert service.store.get("t1", written.memory.id) is not None
    result = down.search("t1", SearchRequest(query="green tea"))
    assert result.degraded and "index unavailable" in (result.degraded_reason or "")
    assert result.results[0].id == ids["tea"]
    assert down.stats("t1").index_documents is None


def test_embedder_down_degrades_to_keyword_channel(service: MemoryService) -> None:
    ids = _seed(service)
    broken = MemoryService(service.store, service.index, BrokenEmbedder(), service.clock)
    result = broken.search("t1", SearchRequest(query="green tea"))
    assert result.degraded and "embedder" in (result.degraded_reason or "")
    assert result.results[0].id == ids["tea"] and result.results[0].vector_rank is None
    written = broken.write("t1", WriteRequest(content="A new fact about tea"))
    assert written.indexed is False and broken.get("t1", written.memory.id).content == "A new fact about tea"


def test_index_drift_is_checked_against_the_store(service: MemoryService) -> None:
    ids = _seed(service)
    index: MemoryIndex = service.index
    service.store.purge("t1", ids["tea"])  # store is the truth; the index still has it
    assert index.count("t1") == 3
    assert ids["tea"] not in [h.id for h in service.search("t1", SearchRequest(query="green tea")).results]


class E5LikeEmbedder:
    """Cosines like e5's: unrelated texts score about 0.85, related ones up to 1.

    cos = 0.85 + 0.15 * hashing cosine: the hashing vector in the first 256 dimensions, a shared
    component in the last one. With the plain hashing embedder unrelated texts score ~0, which
    would make "noise earns no strength" trivially true.
    """

    model_id = "e5-like"
    dimension = 257

    def __init__(self) -> None:
        self._hashing = HashingEmbedder(256)

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        shared = np.full((len(texts), 1), np.sqrt(0.85), dtype=np.float32)
        return np.hstack([np.sqrt(0.15) * self._hashing.embed_documents(texts), shared]).astype(np.float32)

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


def test_unrelated_queries_do_not_strengthen_a_memory_they_bring_back(clock: ManualClock) -> None:
    embedder = E5LikeEmbedder()
    service = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(257), embedder, clock)
    dark = service.write("t1", WriteRequest(content="The user prefers dark mode in every editor")).memory.id
    for query in ("when do we deploy", "where is staging DB", "CI timeout"):
        result = service.search("t1", SearchRequest(query=query))
        assert result.results == []  # the only memory is no answer: not padded in
        assert "(no relevant memories)" in result.context
    stored = service.get("t1", dark)
    assert (stored.strength, stored.access_count) == (1.0, 0)
    service.search("t1", SearchRequest(query="which editor mode does the user prefer"))
    assert service.get("t1", dark).strength == pytest.approx(1.1)


def test_a_year_old_memory_recalled_once_is_weaker_than_a_fresh_one(
    service: MemoryService, clock: ManualClock
) -> None:
    old = service.write("t1", WriteRequest(content="The release train is called Pelican", importance=5))
    clock.advance(days=365)
    fresh = service.write("t1", WriteRequest(content="The build server is called Heron", importance=5))
    service.search("t1", SearchRequest(query="release train Pelican"))
    recalled = service.get("t1", old.memory.id)
    assert recalled.access_count == 1 and recalled.last_accessed_at == clock.now()
    assert recalled.strength == pytest.approx(0.5 ** (365 / 90) + 0.1)
    assert recalled.strength < service.get("t1", fresh.memory.id).strength == 1.0


def test_each_hit_says_why_it_was_found(clock: ManualClock) -> None:
    service = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(257), E5LikeEmbedder(), clock)
    ids = _seed(service)
    hit = service.search("t1", SearchRequest(query="green tea", reinforce=False)).results[0]
    why = hit.why
    assert hit.id == ids["tea"] and why.keyword_score > 0.8 and why.vector_score > 0.3
    w = DEFAULT_RANKING.keyword_weight
    assert hit.relevance == pytest.approx(w * why.keyword_score + (1 - w) * why.vector_score, abs=1e-5)
    assert why.subject == 1.0
    assert why.importance == pytest.approx(0.85) and why.recency == 1.0 and why.strength == pytest.approx(0.9)
    assert hit.score == pytest.approx(
        hit.relevance * why.importance * why.recency * why.strength * why.subject
    )
