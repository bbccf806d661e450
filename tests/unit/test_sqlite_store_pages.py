"""The embedded store's pages seek to their cursor: a deep page costs what the first one does.

A cursor of `(a < ? OR (a = ? AND id < ?))` made SQLite walk the tenant's index from its start on
every page (quadratic in the tenant); a row value `(a, id) < (?, ?)` seeks. The cost is counted in
SQLite's virtual-machine steps (a progress handler), not timed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.models import MemoryFilter, MemoryStatus, Page
from rearview.ports import DueAt, StoreWrite
from rearview.shared.clock import ManualClock
from tests.factories import T0, make_memory

N, LIMIT = 1_500, 50


@pytest.fixture
def store(tmp_path: Path) -> SQLiteMemoryStore:
    store = SQLiteMemoryStore(tmp_path / "store.sqlite3", ManualClock(T0 + timedelta(days=30)))
    store.ensure_schema()
    memories = [make_memory(f"note {i}", at=T0 + timedelta(seconds=i // 2)) for i in range(N)]  # ties too
    for start in range(0, N, 10):
        store.commit([StoreWrite(m, None, None) for m in memories[start : start + 10]])
    store.schedule("t1", [DueAt(m.id, m.version, m.updated_at) for m in memories])
    return store


def _steps_per_page(store: SQLiteMemoryStore, page: Callable[[str | None], Page]) -> tuple[list[int], int]:
    """SQLite steps (in hundreds) each page took, and how many memories the pages held in all."""
    steps = [0]
    reading = store._db.reading

    def step() -> int:
        steps[0] += 1
        return 0  # go on

    @contextmanager
    def counted() -> Iterator[sqlite3.Connection]:
        with reading() as conn:
            conn.set_progress_handler(step, 100)
            try:
                yield conn
            finally:
                conn.set_progress_handler(None, 0)

    store._db.reading = counted  # type: ignore[method-assign]
    per_page, seen, cursor = [], 0, None
    while True:
        steps[0] = 0
        got = page(cursor)
        per_page.append(steps[0])
        seen += len(got.items)
        if (cursor := got.cursor) is None:
            return per_page, seen


@pytest.mark.parametrize("oldest_first", [False, True])
def test_a_deep_page_of_a_listing_costs_what_the_first_does(
    store: SQLiteMemoryStore, oldest_first: bool
) -> None:
    flt = MemoryFilter(statuses=(MemoryStatus.ACTIVE,))
    steps, seen = _steps_per_page(
        store, lambda cursor: store.list_memories("t1", flt, cursor, LIMIT, oldest_first=oldest_first)
    )
    assert seen == N
    assert max(steps[-3:]) <= 2 * max(steps[:3]) + 5, steps


@pytest.mark.parametrize("job", ["decay", "archive"])
def test_a_deep_page_of_what_is_due_costs_what_the_first_does(store: SQLiteMemoryStore, job: str) -> None:
    if job == "archive":  # every memory expires after the clock, two at each second
        store.commit(
            [StoreWrite(m.model_copy(update={"expires_at": m.updated_at + timedelta(days=35), "version": 2}),
                        None, 1)
             for m in store.list_memories("t1", MemoryFilter(), None, N).items]
        )  # fmt: skip
    steps, seen = _steps_per_page(
        store,
        lambda cursor: store.list_due("t1", job, T0 + timedelta(days=60), cursor, LIMIT),  # type: ignore[arg-type]
    )
    assert seen == N
    assert max(steps[-3:]) <= 2 * max(steps[:3]) + 5, steps
