"""The agent's alternatives are searched only where the query alone finds no sure answer (issue 44).

`RankingPolicy.alternatives_unless`: a search asks the query alone first; where its best match
reaches that relevance, the alternatives are neither embedded nor searched. A question asking for
several facts always searches them. `phrasings.returned_as_searched` replays the same choice on
candidates collected with every phrasing, and must agree with the search.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import SearchRequest, WriteRequest
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.phrasings import returned_as_searched
from rearview.service.search.ranking_policy import DEFAULT_RANKING
from rearview.service.search.searcher import Searcher
from rearview.shared.clock import ManualClock
from rearview.testing import UnavailableIndex

MEMORIES = (
    "The user is allergic to peanuts",
    "The build runs on Fridays",
    "The user drives a white Tesla Model 3",
    "The user went to three concerts in March",
)


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds as queries."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.queries: list[str] = []

    def embed_query(self, text: str) -> Any:
        self.queries.append(text)
        return super().embed_query(text)

    def embed_queries(self, texts: Any) -> Any:
        self.queries.extend(texts)
        return super().embed_queries(texts)


def _service(clock: ManualClock, unless: float) -> tuple[MemoryService, CountingEmbedder]:
    embedder = CountingEmbedder(256)
    config = ServiceConfig(ranking=replace(DEFAULT_RANKING, alternatives_unless=unless))
    service = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), embedder, clock, config)
    for text in MEMORIES:
        service.write("t1", WriteRequest(content=text))
    embedder.queries.clear()
    return service, embedder


def _search(service: MemoryService, query: str, alternatives: list[str]) -> list[Any]:
    req = SearchRequest(query=query, alternatives=alternatives, reinforce=False)
    return service.search("t1", req).results


def test_a_sure_answer_leaves_the_alternatives_unsearched(clock: ManualClock) -> None:
    service, embedder = _service(clock, unless=0.0)  # any match is sure
    hits = _search(service, "peanuts allergy", ["Erdnüsse", "nut allergy"])
    assert hits and hits[0].why.phrasing is None
    assert embedder.queries == ["peanuts allergy"]  # neither alternative was embedded


def test_without_a_sure_answer_the_alternatives_are_searched(clock: ManualClock) -> None:
    service, embedder = _service(clock, unless=1.01)  # nothing is ever sure
    hits = _search(service, "Erdnüsse erlaubt?", ["is the user allergic to peanuts"])
    assert embedder.queries == ["Erdnüsse erlaubt?", "is the user allergic to peanuts"]
    assert hits[0].content == MEMORIES[0]
    assert hits[0].why.phrasing == "is the user allergic to peanuts"


def test_a_question_asking_for_several_facts_always_searches_them(clock: ManualClock) -> None:
    service, embedder = _service(clock, unless=0.0)
    _search(service, "how many concerts did the user go to?", ["concerts in March"])
    assert embedder.queries == ["how many concerts did the user go to?", "concerts in March"]


def test_with_the_index_down_the_alternatives_cost_no_second_attempt(clock: ManualClock) -> None:
    """A degraded search answers from the store once: it does not wait on the engine again for them."""
    service, embedder = _service(clock, unless=1.01)
    calls: list[object] = []

    class CountingDown(UnavailableIndex):
        def search(self, query: Any) -> Any:
            calls.append(query)
            return super().search(query)

    down = MemoryService(service.store, CountingDown(), embedder, clock, service.config)
    req = SearchRequest(query="peanuts allergy", alternatives=["Erdnüsse", "nut allergy"], reinforce=False)
    result = down.search("t1", req)
    assert result.degraded and result.results[0].content == MEMORIES[0]
    assert len(calls) == 1
    assert result.degraded_reason is not None and result.degraded_reason.count("index unavailable") == 1


@pytest.mark.parametrize("unless", [0.0, 0.5, 1.01])
@pytest.mark.parametrize(
    ("query", "alternatives"),
    [
        ("peanuts allergy", ["Erdnüsse"]),
        ("Erdnüsse erlaubt?", ["is the user allergic to peanuts", "nut allergy"]),
        ("what car?", ["Tesla", "which vehicle does the user drive"]),
    ],
)
def test_the_replay_agrees_with_the_search(
    clock: ManualClock, unless: float, query: str, alternatives: list[str]
) -> None:
    """Benchmarks re-rank cached candidates with `returned_as_searched`: the search's own order."""
    service, _ = _service(clock, unless)
    searcher = Searcher(service.store, service.index, service.embedder, clock, service.config)
    req = SearchRequest(query=query, alternatives=alternatives, reinforce=False)
    replayed = returned_as_searched(searcher.candidates("t1", req), service.config.ranking)
    searched = service.search("t1", req).results
    assert [h.id for h in searched] == [r.memory.id for r in replayed][: len(searched)]
