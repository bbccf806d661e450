"""Time in questions and memories (`search.temporal`), the temporal factor and the second hop."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import MemoryType, SearchRequest, WriteRequest
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.candidates import Candidates, Fused
from rearview.service.search.expansion import bridge_entities, names_in
from rearview.service.search.fusion import second_hop
from rearview.service.search.ranking import rank
from rearview.service.search.ranking_policy import DEFAULT_RANKING, RankingPolicy
from rearview.service.search.temporal import (
    MonthsOfYear,
    Period,
    asks_for_time,
    question_times,
    stated_periods,
    states_time,
)
from rearview.shared.clock import ManualClock
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


def test_a_question_names_spans_of_months_and_the_past_n_units() -> None:
    now = datetime(2023, 7, 21, tzinfo=UTC)
    (quarter,) = question_times("How many graduations have I attended in the past three months?", now)
    assert isinstance(quarter, Period) and days(quarter) == ("2023-04-22", "2023-07-22")
    (fortnight,) = question_times("What did I buy over the last 2 weeks?", now)
    assert isinstance(fortnight, Period) and days(fortnight) == ("2023-07-07", "2023-07-22")
    summer_to_fall = MonthsOfYear(frozenset({7, 8, 9, 10}))
    assert question_times("the events I attended from July to October", now) == (summer_to_fall,)
    assert question_times("between November and February", now) == (MonthsOfYear(frozenset({11, 12, 1, 2})),)
    assert question_times("two novels I finished in January and March", now) == (
        MonthsOfYear(frozenset({1, 3})),
    )
    assert question_times("museums I visited in the month of February", now) == (
        MonthsOfYear(frozenset({2})),
    )


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


@pytest.mark.parametrize(("learned", "best"), [(False, 1.0), (True, 0.9)])
def test_the_second_hop_lifts_or_adds_memories_to_its_weight_and_lowers_none(
    learned: bool, best: float
) -> None:
    policy = RankingPolicy(hop_weight=0.4, learned_relevance=learned)
    fused = [Fused("seen", 0.9), Fused("low", 0.05)]
    hopped = second_hop(fused, [("seen", 9.0), ("low", 4.5), ("new", 1.0)], policy)
    out = {f.memory_id: f.relevance for f in hopped}
    # at most hop_weight x the best (on the learned scale the best relevance, 0.9), in proportion to BM25
    assert out == {"seen": 0.9, "low": pytest.approx(0.4 * best / 2), "new": pytest.approx(0.4 * best / 9)}
    assert {f.memory_id: f.hop_lifted for f in hopped} == {"seen": False, "low": True, "new": True}
    assert second_hop(fused, [("new", 1.0)], RankingPolicy(hop_weight=0.0)) == fused


def test_a_duration_states_a_time() -> None:
    assert states_time("Seven years now, and I've finally found my muses")
    assert not states_time("I had a lovely day off")
    assert states_time("备份文件在冷存储里保留三十五天。") and states_time("我们每周二下午部署")
    assert states_time("We deploy on Tuesdays") and not states_time("小王对花生过敏。")


def _write(service: MemoryService, content: str, at: datetime, session: str = "s1") -> str:
    req = WriteRequest(content=content, type=MemoryType.EPISODIC, session_id=session, event_time=at)
    return service.write("t1", req).memory.id


def test_reference_time_is_the_now_that_last_week_means(service: MemoryService) -> None:
    june, august = datetime(2025, 6, 10, tzinfo=UTC), datetime(2025, 8, 12, tzinfo=UTC)
    in_june = _write(service, "Ann: We tried a new ramen place downtown", june, "s1")
    in_august = _write(service, "Ann: We tried a new taco place downtown", august, "s2")
    for asked_at, expected in (
        (datetime(2025, 6, 18, tzinfo=UTC), in_june),
        (datetime(2025, 8, 19, tzinfo=UTC), in_august),
    ):
        req = SearchRequest(
            query="Which place did Ann try last week?", reference_time=asked_at, reinforce=False
        )
        result = service.search("t1", req)
        assert result.results[0].id == expected
        assert result.results[0].why.temporal == 1.0 and result.results[1].why.temporal < 1.0


@pytest.mark.parametrize("hop_weight", [0.0, DEFAULT_RANKING.hop_weight])
def test_the_second_hop_finds_what_the_first_hit_names(clock: ManualClock, hop_weight: float) -> None:
    config = ServiceConfig(ranking=replace(DEFAULT_RANKING, hop_weight=hop_weight))
    service = MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), HashingEmbedder(256), clock, config
    )
    at = datetime(2025, 3, 1, tzinfo=UTC)
    _write(service, "Ann: I met Marco at the climbing gym, we talked for hours", at, "s1")
    job = _write(
        service, "Ann: Guess what, Marco is now a pilot for a cargo airline!", at + timedelta(days=9), "s2"
    )
    for i in range(30):
        _write(
            service,
            f"Ann: the climbing gym near work has a new sauna, visit {i}",
            at + timedelta(days=i),
            f"s{i + 3}",
        )
    question = SearchRequest(
        query="What does the person Ann met at the climbing gym do?", top_k=5, reinforce=False
    )
    found = {h.id: h for h in service.search("t1", question).results}
    if hop_weight == 0:
        assert job not in found  # it shares no word with the question but "Ann"
    else:
        assert job in found
        assert found[job].relevance <= hop_weight + 1e-9  # the hop alone: below the reinforcement floor
