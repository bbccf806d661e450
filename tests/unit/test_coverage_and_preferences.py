"""Several-facts questions keep their weaker pieces; advice questions prefer stated preferences."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.candidates import Candidates
from rearview.service.search.coverage import asks_for_several, for_query
from rearview.service.search.preferences import asks_for_advice, states_preference
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from tests.factories import T0, make_memory


@pytest.mark.parametrize(
    "query",
    [
        "How many graduation ceremonies have I attended in the past three months?",
        "What is the total weight of the feed I bought?",
        "Which trip did I take first, the solo trip to Europe or the road trip?",
        "What was the page count of the two novels I finished?",
        "What is the order of the sports events I watched in January?",
        "我一共去了几次博物馆?",
    ],
)
def test_questions_asking_for_several_facts(query: str) -> None:
    assert asks_for_several(query)


@pytest.mark.parametrize("query", ["Where did I meet Sophia?", "What breed is my dog?", "我的狗是什么品种?"])
def test_questions_asking_for_one_fact(query: str) -> None:
    assert not asks_for_several(query)


def test_a_several_facts_question_gets_its_own_relative_floor_only_when_it_is_lower() -> None:
    policy = RankingPolicy(relative_relevance=0.5, several_relative_relevance=0.2)
    assert for_query("How many projects have I led?", policy).relative_relevance == 0.2
    assert for_query("Which project did I lead?", policy).relative_relevance == 0.5
    off = RankingPolicy(relative_relevance=0.5, several_relative_relevance=1.0)  # the same for all
    assert for_query("How many projects have I led?", off).relative_relevance == 0.5


def test_only_a_several_facts_question_spreads_its_first_places_over_sessions() -> None:
    policy = RankingPolicy(session_cap=2)
    assert for_query("How many projects have I led?", policy).session_cap == 2
    assert for_query("Which project did I lead?", policy).session_cap == 0


@pytest.mark.parametrize(
    ("query", "advice"),
    [
        ("What should I cook for the party?", True),
        ("Can you suggest some useful accessories for my phone?", True),
        ("I'm planning a trip to Denver soon. Any suggestions on what to do there?", True),
        ("你能给我推荐一些晚餐吗?", True),
        ("Can you remind me what sealant you recommended for the vase?", False),  # recalls advice given
        ("Where did I buy my tennis racket?", False),
        ("Suggest a name for the project", False),  # not about the asker
    ],
)
def test_questions_asking_the_askers_advice(query: str, advice: bool) -> None:
    assert asks_for_advice(query) is advice


@pytest.mark.parametrize(
    ("content", "preference"),
    [
        ("user: I have been trying to eat less meat", True),
        ("I've been using basil and mint in my cooking lately.", True),
        ("I'm also looking for a phone wallet case.", True),
        ("User prefers window seats", True),
        ("Ann is vegetarian", True),
        ("My favorite band is The Killers", True),
        ("我最近喜欢吃辣", True),
        ("assistant: Here are some ideas you might like for the party.", False),
        ("The party is on Saturday at 7pm.", False),
    ],
)
def test_statements_of_a_preference_habit_or_situation(content: str, preference: bool) -> None:
    assert states_preference(content) is preference


def _advice_order(policy: RankingPolicy) -> list[str]:
    memories = {
        "topic": make_memory(
            "assistant: For a party, a roast with potatoes is easy to cook.", memory_id="topic"
        ),
        "taste": make_memory("user: I have been trying to eat less meat.", memory_id="taste"),
    }
    hits = [("topic", 1.0), ("taste", 0.9)]  # the topical memory matches the question's words better
    candidates = Candidates("What should I cook for the party?", T0, memories, keyword=hits, vector=None)
    return [r.memory.id for r in rank(candidates, policy)]


def test_an_advice_question_finds_the_preference_before_the_topic() -> None:
    assert _advice_order(RankingPolicy(advice_factor=1.0)) == ["topic", "taste"]
    assert _advice_order(RankingPolicy()) == ["taste", "topic"]


JAPAN = [
    "user: My trip to Japan took 5 days in total.",
    "assistant: 5 days in total is a good length for a trip to Japan.",
    "user: How many days of the Japan trip should go to Kyoto?",
    "assistant: Give Kyoto 2 of the days of your trip to Japan.",
]
CHICAGO = [
    "user: Chicago was 3 days for a conference.",
    "assistant: Chicago has great deep dish pizza.",
    "assistant: The Chicago river walk is lovely.",
]
PLANTS = [
    f"note {i}: the {plant} needs watering on weekdays" for i, plant in enumerate(["fern", "ivy", "mint"] * 4)
]


def _first_sessions(policy: RankingPolicy, query: str) -> list[str | None]:
    service = MemoryService(
        InMemoryMemoryStore(),
        InMemoryMemoryIndex(64),
        HashingEmbedder(64),
        config=ServiceConfig(ranking=policy),
    )
    for note in PLANTS:  # unrelated memories: the query's words get their weight
        service.write("t1", WriteRequest(content=note))
    for session, turns in (("japan", JAPAN), ("chicago", CHICAGO)):
        for turn in turns:
            service.write("t1", WriteRequest(content=turn, type=MemoryType.EPISODIC, session_id=session))
    return [hit.session_id for hit in service.search("t1", SearchRequest(query=query, top_k=3)).results]


def test_a_several_facts_question_finds_the_other_sessions_piece_in_the_first_places() -> None:
    query = "How many days did my trips to Japan and Chicago take in total?"
    off = replace(DEFAULT_RANKING, session_cap=0, min_relevance=0.0)
    assert _first_sessions(off, query) == ["japan"] * 3  # the Japan session's turns crowd Chicago out
    on = replace(DEFAULT_RANKING, min_relevance=0.0)
    assert _first_sessions(on, query) == ["japan", "japan", "chicago"]
    one_fact = "Which days did my trips to Japan and Chicago take?"  # no count, no total: no spread
    assert _first_sessions(on, one_fact) == _first_sessions(off, one_fact)
