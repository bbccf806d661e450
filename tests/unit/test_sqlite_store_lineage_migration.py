"""The SQLite store's lineage table is backfilled from the memories stored before it existed."""

from __future__ import annotations

from pathlib import Path

from rearview.backends.sqlite_common import SQLiteDatabase
from rearview.backends.sqlite_store import _COLUMNS, _MIGRATIONS, SQLiteMemoryStore, _row
from tests.factories import make_memory


def test_memories_derived_before_the_lineage_table_are_found_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    old = SQLiteDatabase(path)
    old.migrate("store", _MIGRATIONS[:2])  # the schema before lineage was recorded
    episode = make_memory("Ann: I prefer window seats")
    fact = make_memory("Ann prefers window seats").model_copy(update={"derived_from": [episode.id]})
    columns = _COLUMNS.removesuffix(", fade_at")  # the columns of that schema
    with old.transaction() as conn:
        for memory in (episode, fact):
            conn.execute(f"INSERT INTO memories ({columns}) VALUES ({','.join('?' * 17)})", _row(memory)[:17])
    old.close()

    store = SQLiteMemoryStore(path)
    store.ensure_schema()
    assert store.derived_ids("t1", episode.id) == [fact.id]
    assert store.derived_ids("t1", fact.id) == []
