"""Time in questions and memories (`search.temporal`), the temporal factor and the second hop."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rearview.service.search.expansion import bridge_entities, names_in
from rearview.service.search.ranking import Candidates, RankingPolicy, rank, second_hop
from rearview.service.search.temporal import (
    MonthsOfYear,
    Period,
    asks_for_time,
    question_times,
    stated_periods,
    states_time,
)
from tests.factories import make_memory

MONDAY_8_MAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def days(period: Period) -> tuple[str, str]:
    return period.start.date().isoformat(), period.end.date().isoformat()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday", [("2023-05-07", "2023-05-08")]),
        ("Last Fri I took my kids to a workshop", [("2023-05-05", "2023-05-06")]),
        ("I ran a charity race last Sunday", [("2023-05-07", "2023-05-08")]),
        ("last weekend I joined a program", [("2023-05-06", "2023-05-08")]),
        ("last week was busy", [("2023-05-01", "2023-05-08")]),
        ("I'm going to a conference this month", [("2023-05-01", "2023-06-01")]),
        ("We had a blast last year at the fest", [("2022-01-01", "2023-01-01")]),
        ("we went camping two weekends ago", [("2023-04-17", "2023-05-01")]),
        ("I start in June", [("2023-06-01", "2023-07-01")]),
        ("we met on 5 June 2023", [("2023-06-05", "2023-06-06"), ("2023-06-01", "2023-07-01")]),
        ("昨天我去了公园", [("2023-05-07", "2023-05-08")]),
        ("去年我们去了北京", [("2022-01-01", "2023-01-01")]),
        ("2023年5月6日", [("2023-05-06", "2023-05-07")]),
        ("I may go, who knows", []),
    ],
)
def test_a_memory_states_periods_read_against_its_event_time(
    text: str, expected: list[tuple[str, str]]
) -> None:
    assert [days(p) for p in stated_periods(text, MONDAY_8_MAY)] == expected


def test_a_question_names_periods_read_against_the_reference_time() -> None:
    now = datetime(2023, 8, 25, tzinfo=UTC)
    assert question_times("When did Melanie go camping in June?", now) == (MonthsOfYear(frozenset({6})),)
    assert question_times("a pride parade during the summer?", now) == (MonthsOfYear(frozenset({6, 7, 8})),)
    (last_week,) = question_times("What did I do last week?", now)
    assert isinstance(last_week, Period) and days(last_week) == ("2023-08-14", "2023-08-21")
    (last_month,) = question_times("上个月我去了哪里?", now)
    assert isinstance(last_month, Period) and days(last_month) == ("2023-07-01", "2023-08-01")
    assert question_times("How long ago was Caroline's 18th birthday?", now) == ()  # asks, names none
    assert question_times("What did Caroline research?", now) == ()


def test_asking_when_and_stating_a_time() -> None:
    assert asks_for_time("When did Caroline go to the LGBTQ support group?")
    assert asks_for_time("How long has Caroline had her friends for?")
    assert asks_for_time("In what year did Jon start?") and asks_for_time("她什么时候去的北京?")
    assert not asks_for_time("What did Caroline research?")
    assert states_time("I've known these friends for 4 years") and states_time("since 2016, I think")
    assert not states_time("That sounds lovely, tell me more!")


def _rank(query: str, contents: dict[str, tuple[str, datetime]], **constants: float) -> list[str]:
    memories = {k: make_memory(text, memory_id=k, event_time=at) for k, (text, at) in contents.items()}
    hits = [(k, 1.0) for k in contents]  # equally relevant: only the temporal factor differs
    candidates = Candidates(query, MONDAY_8_MAY, memories, keyword=hits, reference=MONDAY_8_MAY)
    return [r.memory.id for r in rank(candidates, RankingPolicy(**constants))]


def test_a_named_period_prefers_memories_about_it_by_event_time_or_by_what_they_say() -> None:
    june = datetime(2023, 6, 27, tzinfo=UTC)
    july = datetime(2023, 7, 3, tzinfo=UTC)
    contents = {
        "a-july": ("We went camping with the kids", july),
        "b-said-june": ("Camping last month was great", july),  # said in July, about June
        "c-june": ("We went camping at the lake", june),
    }
    ranked = _rank("When did Melanie go camping in June?", contents, time_mismatch_factor=0.5)
    assert ranked[2] == "a-july" and set(ranked[:2]) == {"b-said-june", "c-june"}
    assert (
        _rank("Where did Melanie go camping?", contents, time_mismatch_factor=0.5)[0] == "a-july"
    )  # ties by id


def test_a_when_question_prefers_memories_that_state_a_time() -> None:
    contents = {
        "a": ("I love the support group", MONDAY_8_MAY),
        "b": ("I went to the support group yesterday", MONDAY_8_MAY),
    }
    assert _rank("When did Caroline go to the support group?", contents, timeless_factor=0.8) == ["b", "a"]
    assert _rank("When did Caroline go to the support group?", contents, timeless_factor=1.0) == ["a", "b"]


def test_names_are_capitalized_words_not_opening_a_sentence_and_quoted_titles() -> None:
    text = 'Yesterday I met Marco in New York. He loves "Charlotte\'s Web" and Lisbon! Wow, Oh well.'
    assert names_in(text) == ["Marco", "New York", "Lisbon", "Charlotte's Web"]


def test_bridges_are_the_seeds_names_the_query_and_the_speakers_do_not_name() -> None:
    seeds = [
        make_memory("Ann: I met Marco in Lisbon, and Bo too"),
        make_memory("Ann: Marco took me to Porto"),
    ]
    assert bridge_entities(seeds, "Where does the friend Ann met in Lisbon work?", {"ann", "bo"}) == [
        "Marco",
        "Porto",
    ]


def test_the_second_hop_adds_candidates_at_its_weight_and_leaves_first_hop_ones_alone() -> None:
    policy = RankingPolicy(hop_weight=0.4)
    added = second_hop([("seen", 9.0), ("new", 4.0), ("weak", 1.0)], {"seen"}, policy)
    assert [(f.memory_id, f.relevance) for f in added] == [
        ("new", pytest.approx(0.4 * 4 / 9)),
        ("weak", pytest.approx(0.4 / 9)),
    ]
    assert second_hop([("new", 1.0)], set(), RankingPolicy(hop_weight=0.0)) == []
