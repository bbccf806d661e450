"""The SQLite store's lineage table is backfilled from the memories stored before it existed."""

from __future__ import annotations

from pathlib import Path

from rearview.backends.sqlite_store import SQLiteMemoryStore
from tests.factories import make_memory
from tests.sqlite_schemas import older_store


def test_memories_derived_before_the_lineage_table_are_found_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    episode = make_memory("Ann: I prefer window seats")
    fact = make_memory("Ann prefers window seats").model_copy(update={"derived_from": [episode.id]})
    older_store(path, 2, [episode, fact])  # the schema before lineage was recorded

    store = SQLiteMemoryStore(path)
    store.ensure_schema()
    assert store.derived_ids("t1", episode.id) == [fact.id]
    assert store.derived_ids("t1", fact.id) == []
