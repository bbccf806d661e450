"""As-of recall and verified memories, the same on every backend pair (issue 47, items 3 and 4).

A `MemoryService` over each pair (in-memory fakes, embedded SQLite, the AWS shape: DynamoDB under
moto with a real OpenSearch) writes one timeline under a manual clock: a manager replaced by a
correction (`supersedes`), a stand-up time edited in place, a lunch order soft-forgotten. Searches
as of points between those events must answer with what was active then, as it was; a normal
search must not see what is retired.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import InvalidInputError
from rearview.models import ForgetRequest, SearchRequest, UpdateRequest, WriteRequest
from rearview.ports import MemoryIndex, MemoryStore
from rearview.service.config import ServiceConfig
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.contract.conftest import DIMENSION, INDEXES, STORES
from tests.factories import T0

TENANT = "t1"

PAIRS = [
    pytest.param(("memory", "memory"), id="memory"),
    pytest.param(("sqlite", "sqlite"), id="sqlite"),
    pytest.param(("dynamodb", "opensearch"), id="aws", marks=[pytest.mark.opensearch]),
]


@dataclass(frozen=True)
class Timeline:
    service: MemoryService
    clock: ManualClock
    old_manager: str
    new_manager: str
    standup: str
    lunch: str


@pytest.fixture(params=PAIRS)
def timeline(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Timeline]:
    store_name, index_name = request.param
    clock = ManualClock(T0)
    store: MemoryStore = STORES[store_name](clock, tmp_path, request)
    index: MemoryIndex = INDEXES[index_name](tmp_path, request)
    store.ensure_schema()
    index.ensure_schema()
    service = MemoryService(store, index, HashingEmbedder(DIMENSION), clock, ServiceConfig())

    def write(content: str, supersedes: str | None = None) -> str:
        return service.write(TENANT, WriteRequest(content=content, supersedes=supersedes)).memory.id

    old = write("Priya's manager is Tomás Ortega.")  # day 0
    clock.advance(days=2)
    new = write("Priya's manager is now Hana Kobayashi.", supersedes=old)  # day 2
    clock.advance(days=1)
    standup = write("The team stand-up is at 09:30 every morning.")  # day 3
    clock.advance(days=2)
    service.update(
        TENANT, UpdateRequest(memory_id=standup, content="The team stand-up is at 10:00 every morning.")
    )
    clock.advance(days=1)
    lunch = write("The lunch order for Friday is falafel wraps.")  # day 6
    clock.advance(days=2)
    service.forget(TENANT, ForgetRequest(ids=[lunch]))  # day 8
    clock.advance(days=2)  # now: day 10
    yield Timeline(service, clock, old, new, standup, lunch)


def _search(t: Timeline, query: str, as_of: datetime | None = None) -> list[tuple[str, str]]:
    found = t.service.search(TENANT, SearchRequest(query=query, as_of=as_of, top_k=5))
    return [(h.id, h.content) for h in found.results]


def _day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def test_as_of_answers_with_the_memory_active_then(timeline: Timeline) -> None:
    t = timeline
    query = "who is Priya's manager"
    assert [i for i, _ in _search(t, query, _day(1))] == [t.old_manager]
    then = t.service.search(TENANT, SearchRequest(query=query, as_of=_day(1))).context
    assert "As of 2026-01-02T12:00:00Z: each memory below is as it was believed then" in then
    assert "As of" not in t.service.search(TENANT, SearchRequest(query=query)).context
    assert [i for i, _ in _search(t, query, _day(2.5))] == [t.new_manager]
    assert [i for i, _ in _search(t, query)] == [t.new_manager]  # a normal search: the retired one stays out


def test_as_of_shows_the_version_current_then(timeline: Timeline) -> None:
    t = timeline
    assert _search(t, "when is the team stand-up", _day(4)) == [
        (t.standup, "The team stand-up is at 09:30 every morning.")
    ]
    assert _search(t, "when is the team stand-up", _day(5.5)) == [
        (t.standup, "The team stand-up is at 10:00 every morning.")
    ]
    assert _search(t, "when is the team stand-up", _day(2.5)) == []  # not written yet


def test_as_of_finds_a_memory_forgotten_since_and_search_does_not(timeline: Timeline) -> None:
    t = timeline
    assert [i for i, _ in _search(t, "Friday lunch order falafel", _day(7))] == [t.lunch]
    assert _search(t, "Friday lunch order falafel", _day(9)) == []
    assert _search(t, "Friday lunch order falafel") == []


def test_as_of_reinforces_nothing(timeline: Timeline) -> None:
    t = timeline
    before = t.service.get(TENANT, t.old_manager).access_count
    _search(t, "who is Priya's manager", _day(1))
    assert t.service.get(TENANT, t.old_manager).access_count == before


def test_as_of_in_the_future_or_before_the_horizon_names_the_field(timeline: Timeline) -> None:
    t = timeline
    with pytest.raises(InvalidInputError) as future:
        _search(t, "manager", t.clock.now() + timedelta(minutes=1))
    assert future.value.field == "as_of" and "future" in str(future.value)
    horizon = t.clock.now() - timedelta(days=ServiceConfig().as_of_days)
    with pytest.raises(InvalidInputError) as early:
        _search(t, "manager", horizon - timedelta(seconds=1))
    assert early.value.field == "as_of" and horizon.strftime("%Y-%m-%dT%H:%M:%SZ") in str(early.value)


def test_verified_is_recorded_without_a_new_content_version(timeline: Timeline) -> None:
    t = timeline
    before = t.service.get(TENANT, t.new_manager)
    after = t.service.update(
        TENANT, UpdateRequest(memory_id=t.new_manager, verified=True, agent_id="auditor")
    )
    assert (after.verified_at, after.verified_by) == (t.clock.now(), "auditor")
    assert (after.content, after.updated_at) == (before.content, before.updated_at)
    events = t.service.history(TENANT, t.new_manager, "auditor").events
    assert events[-1].action == "verified" and events[-1].after is not None
    assert events[-1].after["content"] == before.content
    assert t.service.get(TENANT, t.new_manager).verified_at == t.clock.now()
    found = t.service.search(TENANT, SearchRequest(query="who is Priya's manager"))
    assert f"verified {t.clock.now():%Y-%m-%d}" in found.context


def test_verifying_a_retired_memory_names_the_field(timeline: Timeline) -> None:
    t = timeline
    with pytest.raises(InvalidInputError) as retired:
        t.service.update(TENANT, UpdateRequest(memory_id=t.old_manager, verified=True))
    assert retired.value.field == "verified" and "superseded" in str(retired.value)
