"""The embedded index's keyword scale reads the tenant's own row count as FTS5's `bm25()` does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rearview.backends.sqlite_index import SQLiteMemoryIndex, _fts_rows
from rearview.bm25 import CorpusStats
from rearview.models import MemoryFilter
from rearview.ports import IndexDocument, IndexQuery
from tests.factories import make_memory, unit_vector


def _tenant_rows(path: Path, tenant_id: str) -> tuple[int | None, int]:
    conn = sqlite3.connect(path)
    try:
        (n,) = conn.execute("SELECT n FROM fts_tenants WHERE tenant_id = ?", (tenant_id,)).fetchone()
        counted = conn.execute("SELECT COUNT(*) FROM docs WHERE tenant_id = ?", (tenant_id,)).fetchone()[0]
        return _fts_rows(conn, f"docs_fts_{n}"), int(counted)
    finally:
        conn.close()


@pytest.mark.parametrize("written", [1, 127, 128, 300])  # one- and two-byte varints
def test_the_row_count_follows_writes_and_deletes_per_tenant(tmp_path: Path, written: int) -> None:
    path = tmp_path / "index.sqlite3"
    index = SQLiteMemoryIndex(path, 8)
    index.ensure_schema()
    for tenant, count in (("a", written), ("b", 5)):
        docs = [
            IndexDocument(make_memory(f"note {i} about tea", memory_id=f"{tenant}{i}", tenant_id=tenant),
                          unit_vector(i % 8, 8))
            for i in range(count)
        ]  # fmt: skip
        index.upsert(docs)
    assert _tenant_rows(path, "a") == (written, written) and _tenant_rows(path, "b") == (5, 5)
    index.delete("a", [f"a{i}" for i in range(0, written, 2)])
    left = written // 2
    assert _tenant_rows(path, "a") == (left, left) and _tenant_rows(path, "b") == (5, 5)
    hits = index.search(IndexQuery(tenant_id="b", filter=MemoryFilter(), limit=3, text="tea"))
    assert hits.keyword_ceiling == CorpusStats(rows=5, terms=0, hits=(5,)).ceiling()
    index.close()
