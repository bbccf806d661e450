"""The SQLite store's decay due order is backfilled: memories stored before it are due once, at their last write."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.models import MemoryStatus
from rearview.shared.clock import ManualClock
from tests.factories import T0, make_memory
from tests.sqlite_schemas import older_store


def test_memories_stored_before_the_due_order_are_due_for_decay_once(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    live = make_memory("Ann prefers window seats")
    stub = make_memory("an archived one").model_copy(update={"status": MemoryStatus.ARCHIVED})
    older_store(path, 3, [live, stub])  # the schema before the due order

    store = SQLiteMemoryStore(path, ManualClock(T0 + timedelta(days=1)))
    store.ensure_schema()
    due = store.list_due("t1", "decay", T0 + timedelta(days=1))
    assert [m.id for m in due.items] == [live.id]  # the stub is never due
    assert store.list_due("t1", "decay", live.updated_at - timedelta(seconds=1)).items == []
