"""MemoryService.browse, due_for_archival, strength_history, and restoring a soft-forgotten memory."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rearview.errors import InvalidInputError, NotFoundError
from rearview.models import (
    DEFAULT_AGENT,
    ForgetRequest,
    MemoryFilter,
    MemoryStatus,
    SearchRequest,
    UpdateRequest,
    Visibility,
    WriteRequest,
)
from rearview.service.browsing import MAX_BROWSE_PAGE, due_scan
from rearview.service.memory_service import DUE_LOOKAHEAD, MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0

ALL = MemoryFilter(statuses=tuple(MemoryStatus))


def test_browse_pages_through_what_the_agent_may_see(service: MemoryService, clock: ManualClock) -> None:
    ids = []
    for i in range(5):
        clock.advance(minutes=1)
        ids.append(service.write("t1", WriteRequest(content=f"shared fact number {i} about tea")).memory.id)
    private = service.write(
        "t1", WriteRequest(content="private note of agent x", agent_id="x", visibility=Visibility.PRIVATE)
    ).memory.id
    service.write("t2", WriteRequest(content="other tenant's fact"))
    seen, cursor = [], None
    while True:
        page = service.browse("t1", ALL, "y", cursor, limit=2)
        assert len(page.items) <= 2
        seen += [m.id for m in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == list(reversed(ids))
    assert private in [m.id for m in service.browse("t1", ALL, "x", limit=10).items]
    # The filter's agent cannot widen the view.
    assert private not in [
        m.id for m in service.browse("t1", ALL.model_copy(update={"agent_id": "x"}), "y").items
    ]
    with pytest.raises(InvalidInputError, match="limit"):
        service.browse("t1", ALL, limit=MAX_BROWSE_PAGE + 1)


def test_due_for_archival_applies_the_lifecycle_rules_without_writing(
    service: MemoryService, clock: ManualClock
) -> None:
    short = service.write("t1", WriteRequest(content="a passing remark", importance=1)).memory
    important = service.write("t1", WriteRequest(content="the user's name is Ada", importance=5)).memory
    assert service.due_for_archival("t1").items == []
    clock.advance(days=6.97)  # within the 1.5 h lookahead of its 7-day retention
    due = service.due_for_archival("t1")
    assert [d.memory.id for d in due.items] == [short.id] and due.complete
    assert due.items[0].reason.startswith("retention")
    assert important.id not in [d.memory.id for d in due.items]
    assert service.get("t1", short.id).version == 1  # nothing written


def test_a_bounded_due_scan_reads_the_least_recently_updated_first(
    service: MemoryService, clock: ManualClock
) -> None:
    old = service.write("t1", WriteRequest(content="a passing remark", importance=1)).memory
    clock.advance(days=5)
    for i in range(30):  # a busy week: newer memories, none of them due
        service.write("t1", WriteRequest(content=f"decision {i}: use plan {i}", importance=5))
    clock.advance(days=1.97)  # the first one is within the 1.5 h lookahead
    due, scanned, complete = due_scan(
        service.store, "t1", DEFAULT_AGENT, service.config.policy("t1"), clock.now(), DUE_LOOKAHEAD,
        limit=5, scan_limit=10,
    )  # fmt: skip
    assert [m.id for m, _ in due] == [old.id] and (scanned, complete) == (10, False)


def test_strength_history_shows_creation_and_the_latest_recall(
    service: MemoryService, clock: ManualClock
) -> None:
    memory = service.write("t1", WriteRequest(content="User prefers green tea")).memory
    clock.advance(days=3)
    service.search("t1", SearchRequest(query="green tea prefers"))
    clock.advance(days=2)  # an update carries the anchor over: it is not a point of its own
    service.update("t1", UpdateRequest(memory_id=memory.id, content="User prefers jasmine tea"))
    points = service.strength_history("t1", memory.id)
    assert [(p.label, p.at) for p in points] == [
        ("created", memory.created_at),
        ("recalled", T0 + timedelta(days=3)),
    ]
    assert points[1].strength > service.config.decay.strength_at(1.0, 3, points[0].at, points[1].at)
    with pytest.raises(NotFoundError):
        service.strength_history("t2", memory.id)


def test_restore_undoes_a_soft_forget_only(service: MemoryService) -> None:
    memory = service.write("t1", WriteRequest(content="User prefers green tea")).memory
    with pytest.raises(InvalidInputError, match="only archived or soft-forgotten"):
        service.restore("t1", memory.id)
    service.forget("t1", ForgetRequest(ids=[memory.id]))
    assert service.search("t1", SearchRequest(query="green tea")).results == []
    result = service.restore("t1", memory.id)
    assert result.restored_from == "forgotten" and result.indexed
    assert result.memory.status is MemoryStatus.ACTIVE and result.memory.version == 3
    assert [h.id for h in service.search("t1", SearchRequest(query="green tea")).results] == [memory.id]
    with pytest.raises(NotFoundError):
        service.restore("t2", memory.id)
