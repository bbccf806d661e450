"""An index file written before the keyword context column keeps its documents after the migration."""

from __future__ import annotations

from pathlib import Path

from rearview.backends.sqlite_common import SQLiteDatabase
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_index_schema import MIGRATIONS
from rearview.models import MemoryFilter
from rearview.ports import IndexDocument, IndexQuery
from tests.factories import make_memory, unit_vector


def test_documents_indexed_before_the_context_column_are_still_found(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    old = SQLiteDatabase(path)
    old.migrate("index", MIGRATIONS[:2])  # the schema as it was: one FTS5 column
    with old.transaction() as conn:
        conn.execute(
            "INSERT INTO docs (rowid, tenant_id, memory_id, agent_id, visibility, session_id, type, status,"
            " scope_key, event_time, tags, vector, version, content_hash)"
            " VALUES (1, 't1', 'old', 'default', 'shared', NULL, 'semantic', 'active', 'semantic/shared/*/*',"
            " 0, '[]', ?, 1, NULL)",
            (unit_vector(1, 8).tobytes(),),
        )
        conn.execute("INSERT INTO docs_fts (rowid, body) VALUES (1, 'green tea with honey')")
    old.close()

    index = SQLiteMemoryIndex(path, 8)
    index.ensure_schema()
    query = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, text="honey")
    assert [i for i, _ in index.search(query).keyword] == ["old"]
    fresh = make_memory("a new turn", memory_id="new")
    index.upsert([IndexDocument(fresh, unit_vector(2, 8), context="honey")])
    assert [i for i, _ in index.search(query).keyword] == ["old", "new"]
    index.close()
