"""An index file written before a schema change (the keyword context column, the cue column, the as-of
times, the part vectors) keeps its documents."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from rearview.backends.sqlite_common import SQLiteDatabase
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_index_schema import MIGRATIONS
from rearview.models import Cue, Memory, MemoryFilter, MemoryStatus
from rearview.ports import IndexDocument, IndexQuery
from tests.factories import T0, make_memory, unit_vector


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


def test_documents_indexed_before_cues_keep_their_text_and_vectors_and_take_cues(tmp_path: Path) -> None:
    """Issue 44: the per-tenant FTS5 tables are rebuilt with a cue column; nothing indexed is lost."""
    path = tmp_path / "index.sqlite3"
    kept = make_memory("green tea with honey", memory_id="old")
    _older_index(path, -3, kept, ("body", "ctx"), context="breakfast")  # before cues: two FTS5 columns

    index = SQLiteMemoryIndex(path, 8)
    index.ensure_schema()
    by_text = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, text="honey breakfast")
    assert [i for i, _ in index.search(by_text).keyword] == ["old"]
    by_vector = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, vector=unit_vector(1, 8))
    assert index.search(by_vector).vector[0][0] == "old"
    cued = kept.model_copy(update={"cues": [Cue(text="morning drink", by="default")], "version": 2})
    index.upsert([IndexDocument(cued, None, cue_vectors=np.stack([unit_vector(3, 8)]))])
    hits = index.search(
        IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, text="drink", vector=unit_vector(3, 8))
    )
    assert [i for i, _ in hits.keyword] == ["old"] and hits.vector_cues == {"old": 0}
    index.close()


def test_documents_indexed_before_as_of_times_pass_every_as_of_filter(tmp_path: Path) -> None:
    """Issue 47: a document indexed before `created_at`/`updated_at` were kept is never left out of an
    as-of search (its history decides), and a normal search still matches it by status."""
    path = tmp_path / "index.sqlite3"
    kept = make_memory("green tea with honey", memory_id="old", status=MemoryStatus.SUPERSEDED)
    _older_index(path, -2, kept, ("body", "ctx", "cue"))  # before the as-of times

    index = SQLiteMemoryIndex(path, 8)
    index.ensure_schema()
    statuses = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)
    for at in (T0 - timedelta(days=365), T0, T0 + timedelta(days=365)):
        flt = MemoryFilter(statuses=statuses, as_of=at)
        hits = index.search(
            IndexQuery(tenant_id="t1", filter=flt, limit=5, text="honey", vector=unit_vector(1, 8))
        )
        assert [i for i, _ in hits.keyword] == [i for i, _ in hits.vector] == ["old"], at
    normal = IndexQuery(
        tenant_id="t1", filter=MemoryFilter(), limit=5, text="honey", vector=unit_vector(1, 8)
    )
    assert index.search(normal).keyword == [] and index.search(normal).vector == []
    index.close()


def test_documents_indexed_before_parts_are_found_by_their_content_and_take_parts(tmp_path: Path) -> None:
    """A document indexed before part vectors (`docs.part_vectors`) has none and is found as before; its
    next full write brings them."""
    path = tmp_path / "index.sqlite3"
    kept = make_memory("green tea with honey", memory_id="old")
    _older_index(path, -1, kept, ("body", "ctx", "cue"))  # before parts

    index = SQLiteMemoryIndex(path, 8)
    index.ensure_schema()
    by_part = IndexQuery(tenant_id="t1", filter=MemoryFilter(), limit=5, vector=unit_vector(3, 8))
    before = float(unit_vector(1, 8) @ unit_vector(3, 8))
    assert index.search(by_part).vector == [("old", pytest.approx(before, abs=1e-6))]
    again = kept.model_copy(update={"version": 2})
    index.upsert([IndexDocument(again, unit_vector(1, 8), part_vectors=np.stack([unit_vector(3, 8)]))])
    assert index.search(by_part).vector == [("old", pytest.approx(1.0, abs=1e-6))]
    index.close()
    reopened = SQLiteMemoryIndex(path, 8)  # the parts are in the file, not only in the matrix
    assert reopened.search(by_part).vector == [("old", pytest.approx(1.0, abs=1e-6))]
    reopened.close()


def _older_index(
    path: Path, migrations: int, memory: Memory, fts_columns: tuple[str, ...], context: str = ""
) -> None:
    """An index file at an older schema (`MIGRATIONS[:migrations]`) holding `memory` as tenant t1's
    one document, its vector `unit_vector(1, 8)`, its FTS5 table of `fts_columns` (body, ctx[, cue]).

    The docs row has the columns of the schema before the as-of times (none of theirs: they default).
    """
    old = SQLiteDatabase(path)
    old.migrate("index", MIGRATIONS[:migrations])
    with old.transaction() as conn:
        conn.execute("INSERT INTO fts_tenants (n, tenant_id) VALUES (1, 't1')")
        columns = ", ".join(fts_columns)
        conn.execute(f"CREATE VIRTUAL TABLE docs_fts_1 USING fts5({columns}, tokenize = 'porter unicode61')")
        conn.execute(
            "INSERT INTO docs (rowid, tenant_id, memory_id, agent_id, visibility, session_id, type, status,"
            " scope_key, event_time, tags, vector, version, content_hash)"
            " VALUES (1, 't1', ?, 'default', 'shared', NULL, 'semantic', ?, ?, 0, '[]', ?, 1, ?)",
            (
                memory.id,
                memory.status.value,
                memory.scope_key,
                unit_vector(1, 8).tobytes(),
                memory.content_hash,
            ),
        )
        texts = [memory.content, context, ""][: len(fts_columns)]
        marks = ", ".join("?" * len(fts_columns))
        conn.execute(f"INSERT INTO docs_fts_1 (rowid, {columns}) VALUES (1, {marks})", texts)
    old.close()
