"""Contradictions without a link (issue 47): named at write time, the newer ranked first, the older marked."""

from __future__ import annotations

import re

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.bootstrap import CONFLICT_MIN_SIMILARITIES
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    ForgetRequest,
    HistoryAction,
    MemoryStatus,
    MemoryType,
    SearchRequest,
    UpdateRequest,
    Visibility,
    WriteAction,
    WriteRequest,
)
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.service.search.candidates import Factors, Fused, Ranked
from rearview.service.search.contested import newer_first
from rearview.service.write import writer as writer_module
from rearview.service.write.conflicts import (
    LABELLED_OPENING,
    Conflict,
    conflict_with,
    opens_with_label,
    states_change,
)
from rearview.service.write.merge_safety import InformationDifference, InformationKind
from rearview.shared.clock import ManualClock
from tests.factories import make_memory

OLD = "Priya's manager is Tomás Ortega."
NEW = "Priya's manager is now Hana Kobayashi."


# ------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    ("older", "newer", "kind"),
    [
        (OLD, NEW, InformationKind.NAME),
        (OLD, "Priya's manager is Hana Kobayashi.", InformationKind.NAME),  # no "now": the same frame
        (
            "The design review is at 14:00 every Thursday.",
            "Since March the design review is at 15:30.",
            InformationKind.DATE,
        ),
        ("Jonas drinks coffee every morning.", "Jonas no longer drinks coffee.", InformationKind.NEGATION),
        (
            "The team's cloud budget is 40k dollars a month.",
            "The team's cloud budget is now 55k dollars a month.",
            None,
        ),
        ("李娜的直属领导是王强。", "李娜的直属领导现在是赵敏。", InformationKind.NAME),
        ("钢琴课每小时 200 元。", "从 9 月起钢琴课涨到每小时 240 元。", InformationKind.NUMBER),
        ("小明周三下午上钢琴课。", "小明的钢琴课改到周日上午。", InformationKind.DATE),
        # a labelled number in the predicate is still a value of the subject
        ("The offsite is in room 204.", "The offsite is now in room 305.", None),
        ("The staging DB runs Postgres 14.", "The staging DB now runs Postgres 16.", None),
        ("Priya lives at 12 Baker Street.", "Priya now lives at 40 Elm Road.", None),
    ],
)
def test_another_value_about_the_same_subject_is_a_conflict(
    older: str, newer: str, kind: InformationKind | None
) -> None:
    difference = conflict_with(older, newer)
    assert difference is not None
    assert kind is None or difference.kind is kind


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # two preferences about different things: a shared topic, no value differs
        ("Priya prefers tea in the morning.", "Priya prefers window seats on flights."),
        ("李娜喜欢喝绿茶。", "李娜喜欢周末去爬山。"),
        # the same subject, another attribute: names differ, but the two say different things
        ("Priya's dentist is Dr. Lee.", "Priya's manager is Tomás Ortega."),
        ("李娜的牙医是陈医生。", "李娜的直属领导是王强。"),
        # a paraphrase of the same fact: a duplicate, not a conflict
        (
            "The design review is at 14:00 every Thursday.",
            "Every Thursday the design review starts at 14:00.",
        ),
        ("周会在每周一上午十点。", "每周一上午十点开周会。"),
        # unrelated texts with different numbers
        ("The office has 3 meeting rooms.", "Since 2024 the team has 12 engineers."),
        # sharing only whom they are about: "instead of" states a preference here, not a change
        (
            "Keiko uses matplotlib with a colour-blind palette for every chart she shares.",
            "Keiko writes Rust and uses rayon instead of raw threads.",
        ),
        # sharing only the person and the units between numbers (年, 月)
        (
            "李娜在准备 PMP 认证考试，考试时间是 2027 年 3 月。",
            "从 2026 年 10 月起李娜直接向副总裁赵敏汇报。",
        ),
        # the number names which thing the memory is about: two orders, two tickets, not one changed
        ("Order 1234 shipped on Monday.", "Order 5678 shipped on Monday."),
        ("Ticket #4521 is closed.", "Ticket #4599 is now closed."),
        ("PR 812 was merged into main.", "PR 815 was merged into main."),
        ("Flight LH 455 departs from gate B12.", "Flight LH 460 departs from gate B12."),
        ("Invoice INV-2031 was paid in full.", "Invoice INV-2032 was paid in full."),
        ("The sprint 14 demo is on Friday.", "The sprint 15 demo is on Friday."),
    ],
)
def test_a_shared_topic_another_attribute_or_a_paraphrase_is_no_conflict(older: str, newer: str) -> None:
    assert conflict_with(older, newer) is None


def test_a_labelled_opening_is_found_as_by_one_pattern_of_opening_and_value() -> None:
    """`opens_with_label` compiles the opening once; it answers as one pattern of opening + value did."""
    texts = [
        "Order 1234 shipped on Monday.", "my order #1234 shipped", "The sprint 14 demo is on Friday.",
        "Flight LH 455 departs from gate B12.", "Flight LH455 departs", "Invoice INV-2031 was paid.",
        "  -- ticket: 4521 is closed", "I drive a Tesla; order 12 came", "the big room 12b is booked",
        "Our customer ACME 7 pays late", "order 12345", "Order 123 and order 1234", "PR 8120 merged",
    ]  # fmt: skip
    values = [
        "LH 455",
        *["1234", "455", "INV-2031", "4521", "12", "12b", "7", "123", "8120", "812", "14", "B12"],
    ]
    for text in texts:
        for value in values:
            one_pattern = re.match(LABELLED_OPENING.pattern + re.escape(value) + r"\b", text, re.IGNORECASE)
            assert opens_with_label(text, value) is (one_pattern is not None), (text, value)
    assert opens_with_label("Order 1234 shipped on Monday.", "1234")
    assert not opens_with_label("Order 12345 shipped.", "1234")


def test_change_words_are_recognized_in_both_languages() -> None:
    assert states_change("The study group now meets on Wednesdays")
    assert states_change("From November 2026 the handover is on Monday")
    assert states_change("从 2026 年 9 月起周会改成两周一次")
    assert not states_change("我们一起去吃饭")  # 一起 (together) is no change
    assert not states_change("The cat sleeps on the sofa")


# ------------------------------------------------------------------------------ ordering


def _ranked(memory_id: str, score: float, contested_by: list[str] | None = None) -> Ranked:
    memory = make_memory(f"memory {memory_id}", memory_id=memory_id).model_copy(
        update={"contested_by": contested_by or []}
    )
    return Ranked(memory, score, Fused(memory_id, score), Factors(1.0, 1.0, 1.0, 1.0))


def test_the_newer_moves_right_above_the_older_and_an_unreturned_one_joins() -> None:
    old, other, new, absent = (
        _ranked("old", 0.9, ["new"]), _ranked("other", 0.8), _ranked("new", 0.5), _ranked("absent", 0.1)
    )  # fmt: skip
    assert [r.memory.id for r in newer_first([old, other, new], [old, other, new, absent])] == [
        "new", "old", "other"
    ]  # fmt: skip
    lonely = _ranked("lonely", 0.9, ["gone"])  # its contester is no candidate: it stays, alone
    assert [r.memory.id for r in newer_first([lonely], [lonely])] == ["lonely"]
    found_only = _ranked("older", 0.9, ["absent"])
    assert [r.memory.id for r in newer_first([found_only], [found_only, absent])] == ["absent", "older"]


def test_a_chain_of_contests_pulls_in_one_newer_memory_not_the_whole_chain() -> None:
    """A memory contested by m1, m1 by m2, ... (many writes on one subject): the match keeps its place
    but for the one newer memory placed above it; the chain's later links do not push it out of top_k."""
    chain = [_ranked(f"m{i}", 0.1, [f"m{i + 1}"]) for i in range(1, 30)] + [_ranked("m30", 0.1)]
    match = _ranked("match", 0.9, ["m1"])
    other = _ranked("other", 0.5)
    order = [r.memory.id for r in newer_first([match, other], [match, other, *chain])]
    assert order == ["m1", "match", "other"]
    many = _ranked("many", 0.9, ["c1", "c2", "c3"])  # contested by three writes: the best goes above
    contesters = [_ranked("c1", 0.2), _ranked("c2", 0.3), _ranked("c3", 0.1)]
    placed = newer_first([many, other], [many, other, *contesters])
    assert [r.memory.id for r in placed] == ["c2", "many", "other"]
    returned_chain = [_ranked("n1", 0.9, ["n2"]), _ranked("n2", 0.8, ["n3"]), _ranked("n3", 0.7)]
    assert [r.memory.id for r in newer_first(returned_chain, returned_chain)] == ["n3", "n2", "n1"]


def test_a_cycle_of_contests_ends() -> None:
    a, b = _ranked("a", 0.9, ["b"]), _ranked("b", 0.8, ["a"])
    assert sorted(r.memory.id for r in newer_first([a, b], [a, b])) == ["a", "b"]


# ------------------------------------------------------------------------------ the service


@pytest.fixture
def service(clock: ManualClock) -> MemoryService:
    config = ServiceConfig(conflict_min_similarity=CONFLICT_MIN_SIMILARITIES["hashing"])
    return MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), HashingEmbedder(256), clock, config=config
    )


def test_the_write_names_the_older_and_the_newer_ranks_first(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    new = service.write("t1", WriteRequest(content=NEW))
    assert new.action is WriteAction.CREATED and old.conflicts == []
    assert [(c.id, c.content, c.written_at) for c in new.conflicts] == [
        (old.memory.id, OLD, old.memory.created_at)
    ]
    stored = service.get("t1", old.memory.id)
    assert stored.contested_by == [new.memory.id] and stored.status is MemoryStatus.ACTIVE
    assert stored.updated_at == old.memory.updated_at  # recency is not refreshed by the mark
    event = service.history("t1", old.memory.id).events[-1]
    assert (
        event.action is HistoryAction.UPDATED and event.note == f"contested by {new.memory.id}: name differs"
    )
    assert "hana" not in (event.note or "").casefold()  # the newer's text stays out of the older's history

    found = service.search("t1", SearchRequest(query="who is Priya's manager", reinforce=False))
    assert [h.id for h in found.results][:2] == [new.memory.id, old.memory.id]
    assert found.results[1].contested_by == [new.memory.id]
    assert f"possibly outdated: newer id {new.memory.id}" in found.context
    assert found.context.count("possibly outdated") == 1


def test_the_older_alone_is_still_returned_marked(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    new = service.write("t1", WriteRequest(content=NEW))
    found = service.search("t1", SearchRequest(query="Tomás Ortega", reinforce=False, channels=("keyword",)))
    assert [h.id for h in found.results] == [old.memory.id]
    assert found.results[0].contested_by == [new.memory.id]
    assert "possibly outdated" in found.context


def test_retiring_the_older_with_supersedes_ends_the_conflict(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    new = service.write("t1", WriteRequest(content=NEW))
    again = service.write("t1", WriteRequest(content=NEW, supersedes=old.memory.id))
    assert again.action is WriteAction.SUPERSEDED and again.memory.id == new.memory.id
    assert service.get("t1", old.memory.id).status is MemoryStatus.SUPERSEDED
    found = service.search("t1", SearchRequest(query="who is Priya's manager", reinforce=False))
    assert [h.id for h in found.results] == [new.memory.id]
    assert "possibly outdated" not in found.context


def test_forgetting_the_newer_lifts_the_mark(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    new = service.write("t1", WriteRequest(content=NEW))
    service.forget("t1", ForgetRequest(ids=[new.memory.id]))
    found = service.search("t1", SearchRequest(query="who is Priya's manager", reinforce=False))
    assert [h.id for h in found.results] == [old.memory.id]
    assert found.results[0].contested_by == [] and "possibly outdated" not in found.context


def test_no_conflict_across_visibility_or_agents(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content=OLD, agent_id="a1", visibility=Visibility.PRIVATE))
    other_agent = service.write("t1", WriteRequest(content=NEW, agent_id="a2", visibility=Visibility.PRIVATE))
    shared = service.write("t1", WriteRequest(content=NEW + " Really.", agent_id="a1"))
    other_tenant = service.write("t2", WriteRequest(content=NEW))
    assert other_agent.conflicts == shared.conflicts == other_tenant.conflicts == []


def test_a_paraphrase_merges_and_another_topic_names_nothing(service: MemoryService) -> None:
    first = service.write("t1", WriteRequest(content="Priya prefers tea in the morning."))
    again = service.write("t1", WriteRequest(content="priya prefers tea in the morning"))
    other = service.write("t1", WriteRequest(content="Priya prefers window seats on flights."))
    assert again.action is WriteAction.MERGED and again.conflicts == []
    assert other.action is WriteAction.CREATED and other.conflicts == []
    assert service.get("t1", first.memory.id).contested_by == []


def test_an_explicit_supersedes_names_no_conflict(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    new = service.write("t1", WriteRequest(content=NEW, supersedes=old.memory.id))
    assert new.action is WriteAction.SUPERSEDED and new.conflicts == []


def test_another_agents_memory_is_named_but_not_marked(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD, agent_id="alice"))
    new = service.write("t1", WriteRequest(content=NEW, agent_id="mallory"))
    assert [c.id for c in new.conflicts] == [old.memory.id]
    stored = service.get("t1", old.memory.id)
    assert stored.contested_by == [] and stored.version == old.memory.version


def test_editing_the_older_text_answers_the_conflict(service: MemoryService) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    service.write("t1", WriteRequest(content=NEW))
    service.update(
        "t1", UpdateRequest(memory_id=old.memory.id, importance=4)
    )  # not its text: still contested
    assert service.get("t1", old.memory.id).contested_by != []
    service.update(
        "t1", UpdateRequest(memory_id=old.memory.id, content="Priya's former manager was Tomás Ortega.")
    )
    assert service.get("t1", old.memory.id).contested_by == []


def test_an_event_that_happened_is_never_contested(service: MemoryService) -> None:
    event = service.write(
        "t1", WriteRequest(content="On 3 May Priya's manager was Tomás Ortega.", type=MemoryType.EPISODIC)
    )
    new = service.write("t1", WriteRequest(content="Since June Priya's manager is Hana Kobayashi."))
    assert new.conflicts == [] and service.get("t1", event.memory.id).contested_by == []


def test_a_write_is_kept_when_the_older_changed_before_the_mark(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = service.write("t1", WriteRequest(content=OLD))
    seen = service.get("t1", old.memory.id)
    service.update("t1", UpdateRequest(memory_id=old.memory.id, importance=5))  # a newer version now
    stale = Conflict(
        service.store.get("t1", old.memory.id).model_copy(update={"version": seen.version}),  # type: ignore[union-attr]
        0.9,
        InformationDifference(InformationKind.NAME, ("tomás",), ("hana",)),
    )
    monkeypatch.setattr(writer_module, "find_conflict", lambda *args: stale)
    new = service.write("t1", WriteRequest(content=NEW))
    assert new.action is WriteAction.CREATED and [c.id for c in new.conflicts] == [old.memory.id]
    assert service.get("t1", new.memory.id).content == NEW
    assert (
        service.get("t1", old.memory.id).contested_by == []
    )  # the mark waits for the next conflicting write
