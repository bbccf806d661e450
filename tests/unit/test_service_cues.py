"""Recall cues on write and update, alternatives on search: what the agent adds (issue 44).

Cues are part of the memory (attributed, in history), searched beside its content, never its
content: dedup compares content alone. Alternatives are searched with the query, and `why` names
the cue or phrasing that carried a hit. Bad input names the field and the bound; nothing is written.
"""

from __future__ import annotations

from typing import Any

import pytest

from rearview.errors import InvalidInputError
from rearview.limits import MAX_ALTERNATIVES, MAX_CUE_CHARS, MAX_CUES, MAX_MEMORY_CUES
from rearview.models import (
    Cue,
    HistoryAction,
    SearchRequest,
    UpdateRequest,
    WriteAction,
    WriteRequest,
    united_cues,
)
from rearview.service.memory_service import MemoryService


def _search(service: MemoryService, query: str, **kw: Any) -> list[Any]:
    return service.search("t1", SearchRequest(query=query, reinforce=False, **kw)).results


def test_cues_are_stored_attributed_to_their_writer(service: MemoryService) -> None:
    written = service.write(
        "t1", WriteRequest(content="Mochi is the cat", agent_id="a1", cues=["what is my pet called?"])
    )
    assert written.memory.cues == [Cue(text="what is my pet called?", by="a1")]
    assert written.memory.content == "Mochi is the cat"  # a cue is never content
    assert service.get("t1", written.memory.id, "a1").cues == written.memory.cues


def test_a_cue_carries_a_hit_and_why_names_it(service: MemoryService) -> None:
    service.write("t1", WriteRequest(content="The standup moved to ten"))
    cued = service.write(
        "t1",
        WriteRequest(
            content="Dr Okafor sees the user on Tuesdays",
            cues=["dentist appointment weekday", "牙医预约"],
        ),
    )
    hits = _search(service, "dentist appointment weekday")
    assert hits and hits[0].id == cued.memory.id
    assert hits[0].why.cue == "dentist appointment weekday"
    assert hits[0].why.phrasing is None


def test_an_alternative_finds_what_the_query_alone_misses(service: MemoryService) -> None:
    target = service.write("t1", WriteRequest(content="The user is allergic to peanuts"))
    service.write("t1", WriteRequest(content="The build runs on Fridays"))
    alone = _search(service, "Erdnüsse erlaubt?")
    assert target.memory.id not in [h.id for h in alone if h.relevant]
    helped = _search(service, "Erdnüsse erlaubt?", alternatives=["is the user allergic to peanuts"])
    assert helped[0].id == target.memory.id
    assert helped[0].why.phrasing == "is the user allergic to peanuts"


def test_cues_never_decide_dedup(service: MemoryService) -> None:
    cue = "what does the user drink in the morning?"
    first = service.write("t1", WriteRequest(content="The user drinks green tea", cues=[cue]))
    other = service.write("t1", WriteRequest(content="The user walks the dog at seven", cues=[cue]))
    assert other.action is WriteAction.CREATED and other.memory.id != first.memory.id
    # A write whose content is another memory's cue is not that memory's duplicate either.
    asked = service.write("t1", WriteRequest(content=cue))
    assert asked.action is WriteAction.CREATED


def test_a_merge_keeps_the_union_of_cues_with_their_authors(service: MemoryService) -> None:
    first = service.write(
        "t1", WriteRequest(content="The user prefers pnpm", agent_id="a1", cues=["npm or pnpm?"])
    )
    again = service.write(
        "t1",
        WriteRequest(
            content="The user prefers pnpm", agent_id="a1", cues=["NPM or pnpm?", "package manager"]
        ),
    )
    assert again.action is WriteAction.MERGED
    assert [c.text for c in again.memory.cues] == ["npm or pnpm?", "package manager"]
    corroborated = service.write(
        "t1", WriteRequest(content="The user prefers pnpm", agent_id="a2", cues=["包管理器"])
    )
    # Another agent's duplicate is its own copy (issue 45.4), with its own cues; a search shows one.
    assert corroborated.action is WriteAction.CORROBORATED and corroborated.corroborates == first.memory.id
    assert corroborated.memory.cues == [Cue(text="包管理器", by="a2")]
    hits = _search(service, "包管理器")
    assert hits and hits[0].id == corroborated.memory.id


def test_united_cues_are_bounded() -> None:
    kept = [Cue(text=f"cue {i}", by="a") for i in range(MAX_MEMORY_CUES - 1)]
    added = [Cue(text="CUE 0", by="b"), Cue(text="new", by="b"), Cue(text="one too many", by="b")]
    united = united_cues(kept, added)
    assert len(united) == MAX_MEMORY_CUES and united[-1] == Cue(text="new", by="b")


def test_update_replaces_or_clears_cues_and_history_keeps_them(service: MemoryService) -> None:
    written = service.write(
        "t1", WriteRequest(content="Wifi password is on the fridge", cues=["where is the wifi code"])
    )
    memory_id = written.memory.id
    updated = service.update("t1", UpdateRequest(memory_id=memory_id, cues=["router login"]))
    assert [c.text for c in updated.cues] == ["router login"]
    assert _search(service, "router login")[0].why.cue == "router login"
    assert all(h.why.cue != "where is the wifi code" for h in _search(service, "where is the wifi code"))
    cleared = service.update("t1", UpdateRequest(memory_id=memory_id, cues=[]))
    assert cleared.cues == []
    events = service.history("t1", memory_id).events
    changes = [e for e in events if e.action is HistoryAction.UPDATED]
    assert changes[0].before is not None and changes[0].after is not None
    assert changes[0].before["cues"] == [{"text": "where is the wifi code", "by": "default"}]
    assert changes[0].after["cues"] == [{"text": "router login", "by": "default"}]


@pytest.mark.parametrize(
    ("cues", "field", "words"),
    [
        ([f"cue {i}" for i in range(MAX_CUES + 1)], "cues", f"the limit is {MAX_CUES}"),
        (["where?", "Where? "], "cues", "repeats"),
        (["x" * (MAX_CUE_CHARS + 1)], "cues[0]", f"the limit is {MAX_CUE_CHARS}"),
        (["  "], "cues[0]", "must not be empty"),
        ([3], "cues[0]", "string"),
        ("one cue", "cues", "list"),
    ],
)
def test_bad_cues_name_the_field_and_write_nothing(
    service: MemoryService, cues: Any, field: str, words: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        service.write("t1", WriteRequest(content="Something true", cues=cues))
    assert caught.value.field == field and words in str(caught.value)
    assert service.stats("t1").total == 0


@pytest.mark.parametrize(
    ("alternatives", "field", "words"),
    [
        (
            [f"alt {i}" for i in range(MAX_ALTERNATIVES + 1)],
            "alternatives",
            f"the limit is {MAX_ALTERNATIVES}",
        ),
        ([], "alternatives", "empty"),
        (["tea", "TEA"], "alternatives", "repeats"),
        (["What tea?"], "alternatives[0]", "repeats `query`"),
        (["x" * 1001], "alternatives[0]", "the limit is 1000"),
        ([None], "alternatives[0]", "string"),
    ],
)
def test_bad_alternatives_name_the_field(alternatives: Any, field: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        SearchRequest(query="what tea?", alternatives=alternatives)
    assert caught.value.field == field and words in str(caught.value)


@pytest.mark.parametrize("seed", range(200))
def test_the_similarity_floor_keeps_plain_cosines_three_best_within_their_places(seed: int) -> None:
    """Whatever the score order, plain cosine's best r-th memory ends at place r + slack or before,
    and all three among the first three: hit@3 is never below plain cosine's."""
    import random

    from rearview.service.search.admission import _by_deadlines

    rng = random.Random(seed)
    ids = [f"m{i}" for i in range(rng.randint(3, 9))]
    order = [_Ranked(i) for i in rng.sample(ids, len(ids))]
    due = rng.sample(ids, 3)
    slack = rng.choice((0, 1, 2))
    deadline = [min(r + slack, 2) for r in range(3)]
    out = [r.memory.id for r in _by_deadlines(order, due, deadline)]  # type: ignore[arg-type]
    assert sorted(out) == sorted(ids)
    assert all(out.index(m) <= deadline[r] for r, m in enumerate(due))
    rest = [m for m in out if m not in due]
    assert rest == [r.memory.id for r in order if r.memory.id not in due]  # the others keep the score order


class _Ranked:
    def __init__(self, memory_id: str) -> None:
        self.memory = type("M", (), {"id": memory_id})()


def test_an_alternative_is_searched_less_deep_than_the_query(service: MemoryService) -> None:
    """Each alternative reads `candidates_per_alternative` (at least top_k), the query the full depth."""
    service.write("t1", WriteRequest(content="The user is allergic to peanuts"))
    limits: list[int] = []
    search = service.index.search

    def spy(query: Any) -> Any:
        limits.append(query.limit)
        return search(query)

    service.index.search = spy  # type: ignore[method-assign]
    _search(service, "nuts allowed?", alternatives=["peanut allergy", "Erdnüsse"])
    policy = service.config.ranking
    assert limits[:3] == [policy.candidates_per_channel] + [policy.candidates_per_alternative] * 2
    limits.clear()
    _search(service, "nuts allowed?", alternatives=["peanut allergy"], top_k=30)
    assert limits[:2] == [60, 30]  # the query 2 x top_k, an alternative top_k
