"""Several-facts questions keep their weaker pieces; advice questions prefer stated preferences."""

from __future__ import annotations

import pytest

from rearview.service.search.candidates import Candidates
from rearview.service.search.coverage import asks_for_several, for_query
from rearview.service.search.preferences import asks_for_advice, states_preference
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import RankingPolicy
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
    assert for_query("Which project did I lead?", policy) is policy
    off = RankingPolicy(relative_relevance=0.5)  # several_relative_relevance 1.0: the same for all
    assert for_query("How many projects have I led?", off) is off


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
    assert _advice_order(RankingPolicy()) == ["topic", "taste"]
    assert _advice_order(RankingPolicy(advice_factor=0.7)) == ["taste", "topic"]
