"""The due orders of the MemoryStore contract (`list_due`, `schedule`): what a lifecycle run reads.

Every store runs these unchanged: a run reads what is due, soonest first, and nothing else.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from rearview.models import Memory, MemoryStatus
from rearview.ports import DueAt, DueJob, MemoryStore, StoreWrite, Touch
from rearview.shared.clock import ManualClock
from tests.factories import T0, created, make_memory, minutes


def all_due(store: MemoryStore, job: DueJob, before: object, limit: int) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = store.list_due("t1", job, before, cursor, limit)  # type: ignore[arg-type]
        ids += [m.id for m in page.items]
        if (cursor := page.cursor) is None:
            return ids


def changed(memory: Memory, at: object, **update: object) -> StoreWrite:
    new = memory.model_copy(update={"updated_at": at, "version": memory.version + 1, **update})
    return StoreWrite(new, None, memory.version)


@pytest.mark.parametrize("limit", [1, 2, 100])
def test_archive_due_order_is_the_live_expiring_memories_soonest_first(
    store: MemoryStore, clock: ManualClock, limit: int
) -> None:
    at = [make_memory(f"memory {i}", expires_at=T0 + minutes(10 * (5 - i))) for i in range(5)]
    superseded = make_memory("superseded", status=MemoryStatus.SUPERSEDED, expires_at=T0 + minutes(15))
    stub = make_memory("stub", status=MemoryStatus.ARCHIVED, expires_at=T0 + minutes(5))
    forever = make_memory("no expiry")
    other = make_memory("other tenant", tenant_id="t2", expires_at=T0 + minutes(5))
    store.commit([created(m) for m in (*at, superseded, stub, forever, other)])
    clock.advance(minutes=12)  # at[4] (10 min) has expired: the store's sweep, not the due order, has it
    due = all_due(store, "archive", T0 + minutes(30), limit)
    assert due == [superseded.id, at[3].id, at[2].id]


@pytest.mark.parametrize("limit", [1, 3, 100])
def test_decay_due_order_is_each_write_once_then_what_was_scheduled(
    store: MemoryStore, clock: ManualClock, limit: int
) -> None:
    early, middle, late = (make_memory(f"m{i}", at=T0 + minutes(i)) for i in range(3))
    stub = make_memory("stub", status=MemoryStatus.ARCHIVED)
    store.commit([created(m) for m in (early, middle, late, stub)])
    clock.advance(minutes=10)
    now = clock.now()
    assert all_due(store, "decay", now, limit) == [early.id, middle.id, late.id]  # due at their write
    assert all_due(store, "decay", T0 + minutes(1), limit) == [early.id, middle.id]

    store.schedule(
        "t1",
        [
            DueAt(early.id, early.version, now + minutes(60)),
            DueAt(middle.id, middle.version, None),  # never (e.g. protected)
            DueAt(late.id, late.version + 1, now + minutes(60)),  # not its version: left alone
        ],
    )
    assert all_due(store, "decay", now, limit) == [late.id]
    assert all_due(store, "decay", now + minutes(60), limit) == [late.id, early.id]

    store.touch("t1", [Touch(early.id, 1.5, now, 1)])  # a recall only postpones fading: order kept
    assert all_due(store, "decay", now + minutes(60), limit) == [late.id, early.id]
    clock.advance(minutes=1)
    store.commit([changed(middle, clock.now(), content="m1 changed")])  # a write: due again, once
    assert all_due(store, "decay", clock.now(), limit) == [late.id, middle.id]
    store.commit([changed(late, late.updated_at, status=MemoryStatus.ARCHIVED)])  # archived: never due
    assert all_due(store, "decay", clock.now() + minutes(60), limit) == [middle.id, early.id]


def test_a_due_cursor_resumes_after_its_position_while_the_job_moves_memories(
    store: MemoryStore, clock: ManualClock
) -> None:
    memories = [make_memory(f"m{i}", at=T0 + minutes(i)) for i in range(6)]
    store.commit([created(m) for m in memories])
    clock.advance(minutes=10)
    now = clock.now()
    first = store.list_due("t1", "decay", now, None, 2)
    assert [m.id for m in first.items] == [memories[0].id, memories[1].id]
    # the job schedules what it kept (later than now) and archives one of the next page's memories
    store.schedule("t1", [DueAt(m.id, m.version, now + timedelta(days=3)) for m in first.items])
    store.commit([changed(memories[3], memories[3].updated_at, status=MemoryStatus.ARCHIVED)])
    rest = all_due_after(store, now, first.cursor)
    assert rest == [memories[2].id, memories[4].id, memories[5].id]


def all_due_after(store: MemoryStore, now: object, cursor: str | None) -> list[str]:
    ids: list[str] = []
    while cursor is not None:
        page = store.list_due("t1", "decay", now, cursor, 2)  # type: ignore[arg-type]
        ids += [m.id for m in page.items]
        cursor = page.cursor
    return ids
