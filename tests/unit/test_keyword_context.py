"""The keyword context through the service: built from session neighbours, rebuilt when they change."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rearview.models import ForgetRequest, Memory, MemoryFilter, MemoryType, UpdateRequest, WriteRequest
from rearview.ports import IndexQuery
from rearview.service.keyword_context import NEIGHBOUR_GAP, date_words, session_contexts
from rearview.service.memory_service import MemoryService
from rearview.service.reindex import reindex_tenant
from rearview.shared.clock import ManualClock
from tests.factories import T0, make_memory


def _write(
    service: MemoryService,
    clock: ManualClock,
    content: str,
    session: str | None,
    hours: float,
    kind: MemoryType = MemoryType.EPISODIC,
) -> str:
    clock.advance(seconds=1)  # write order follows the clock
    at = T0 + timedelta(hours=hours)
    req = WriteRequest(content=content, type=kind, session_id=session, event_time=at)
    return service.write("t1", req).memory.id


def _keyword(service: MemoryService, text: str) -> set[str]:
    query = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=20, text=text)
    return {memory_id for memory_id, _ in service.index.search(query).keyword}


def test_the_date_in_words_is_every_memorys_context(service: MemoryService, clock: ManualClock) -> None:
    alone = _write(service, clock, "The printer is on the second floor", None, 0)
    assert _keyword(service, date_words(T0)) == {alone}


def test_neighbours_in_one_session_find_each_other(service: MemoryService, clock: ManualClock) -> None:
    first = _write(service, clock, "Caroline: we adopted a puppy named Rex", "s1", 0)
    second = _write(service, clock, "Melanie: does it chew everything", "s1", 1)
    other = _write(service, clock, "Jon: my shoes are ruined", "s2", 1)
    assert _keyword(service, "puppy") == {first, second}  # the second through its previous turn
    assert _keyword(service, "chew") == {first, second}  # the first rewritten when the second arrived
    assert _keyword(service, "shoes") == {other}  # not across sessions


def test_every_type_is_a_neighbour_but_its_own_words_rank_first(
    service: MemoryService, clock: ManualClock
) -> None:
    """Clients write conversation turns with any type; the context counts at half weight."""
    tea = _write(service, clock, "The user drinks green tea", "s1", 0, MemoryType.SEMANTIC)
    deploy = _write(service, clock, "Deploys happen on Tuesdays", "s1", 0, MemoryType.PROCEDURAL)
    turn = _write(service, clock, "Caroline: lovely weather today", "s1", 0)
    assert _keyword(service, "tea") == {tea, deploy, turn}  # tea is a previous neighbour of both
    assert _keyword(service, "weather") == {tea, deploy, turn}
    ranked = service.index.search(IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=20, text="tea"))
    assert ranked.keyword[0][0] == tea


def test_no_link_across_a_gap_longer_than_six_hours(service: MemoryService, clock: ManualClock) -> None:
    first = _write(service, clock, "Caroline: the support group met today", "s1", 0)
    gap = NEIGHBOUR_GAP.total_seconds() / 3600
    later = _write(service, clock, "Caroline: I painted a sunset", "s1", gap + 1)
    assert _keyword(service, "support group") == {first}
    assert _keyword(service, "sunset") == {later}


def test_a_forgotten_memory_leaves_its_neighbours_linked_to_each_other(
    service: MemoryService, clock: ManualClock
) -> None:
    a = _write(service, clock, "Caroline: we went camping by the lake", "s1", 0)
    b = _write(service, clock, "Melanie: was it cold at night", "s1", 1)
    c = _write(service, clock, "Caroline: freezing, did you see any bears", "s1", 2)
    d = _write(service, clock, "Melanie: no bears, thankfully", "s1", 3)
    e = _write(service, clock, "Caroline: only a heron at dawn", "s1", 4)
    assert _keyword(service, "heron") == {b, c, d, e}  # up to three neighbours on each side
    service.forget("t1", ForgetRequest(ids=[c]))
    assert _keyword(service, "heron") == {a, b, d, e}  # a is now three before e
    assert _keyword(service, "freezing") == set()


def test_an_update_rewrites_the_neighbours_context(service: MemoryService, clock: ManualClock) -> None:
    a = _write(service, clock, "Caroline: the concert was loud", "s1", 0)
    b = _write(service, clock, "Melanie: which band played", "s1", 1)
    service.update("t1", UpdateRequest(memory_id=b, content="Melanie: was it the jazz quartet"))
    assert _keyword(service, "band") == set()
    assert _keyword(service, "quartet") == {a, b}


def test_a_superseded_memory_is_no_ones_neighbour(service: MemoryService, clock: ManualClock) -> None:
    a = _write(service, clock, "Caroline: my favourite colour is teal", "s1", 0)
    b = _write(service, clock, "Melanie: the meeting moved to Friday", "s1", 1)
    newer = WriteRequest(
        content="Caroline: my favourite colour is now amber", type=MemoryType.EPISODIC, supersedes=a
    )
    service.write("t1", newer)
    assert _keyword(service, "teal") == set()  # b's context no longer holds the retired memory
    assert b in _keyword(service, "Friday")


def test_reindex_rebuilds_every_context(service: MemoryService, clock: ManualClock) -> None:
    a = _write(service, clock, "Caroline: the tomatoes are ripe", "s1", 0)
    b = _write(service, clock, "Melanie: make a sauce then", "s1", 1)
    service.index.delete("t1", [a, b])
    assert reindex_tenant(service, "t1") == 2
    assert _keyword(service, "tomatoes") == {a, b}
    assert _keyword(service, "sauce") == {a, b}


@pytest.mark.parametrize("gap_hours", [0.0, 6.0])
def test_session_contexts_link_by_write_order_within_the_gap(gap_hours: float) -> None:
    start = make_memory("one", memory_id="m1", session_id="s", at=T0, event_time=T0)
    middle = make_memory("two", memory_id="m2", session_id="s", at=T0 + timedelta(seconds=1), event_time=T0)
    end = make_memory(
        "three", memory_id="m3", session_id="s", at=T0 + timedelta(seconds=2),
        event_time=T0 + timedelta(hours=gap_hours),
    )  # fmt: skip
    contexts = session_contexts([end, start, middle])
    day = date_words(T0)
    assert contexts["m1"] == f"[{day}] \ntwo\nthree"
    assert contexts["m2"] == f"[{day}] one\nthree"
    assert contexts["m3"] == f"[{date_words(end.event_time)}] one\ntwo"


def test_an_extracted_memory_is_no_ones_neighbour_but_has_the_messages_around_it() -> None:
    def said(content: str, n: int, **update: object) -> Memory:
        memory = make_memory(
            content, memory_id=f"m{n}", session_id="s", at=T0 + timedelta(seconds=n), event_time=T0
        )
        return memory.model_copy(update=update)

    turns = [said("Ann: I like jazz", 1), said("Bo: me too", 3), said("Ann: see you", 4)]
    fact = said("Ann likes jazz", 2, derived_from=["m1"], metadata={"extracted_by": "rules"})
    contexts = session_contexts([*turns, fact])
    day = date_words(T0)
    assert contexts["m1"] == f"[{day}] \nBo: me too\nAnn: see you"  # not the fact
    assert contexts["m3"] == f"[{day}] Ann: I like jazz\nAnn: see you"
    assert contexts["m2"] == f"[{day}] Ann: I like jazz\nBo: me too\nAnn: see you"
