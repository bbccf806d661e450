"""The embedded index's keyword scale reads the tenant's own row count as FTS5's `bm25()` does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rearview.backends.sqlite_index import INDEX_CACHE_MIB, SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.backends.sqlite_terms import fts_rows
from rearview.models import MemoryFilter
from rearview.ports import IndexDocument, IndexQuery
from rearview.text.bm25 import CorpusStats
from tests.factories import make_memory, unit_vector


def _tenant_rows(path: Path, tenant_id: str) -> tuple[int | None, int]:
    conn = sqlite3.connect(path)
    try:
        (n,) = conn.execute("SELECT n FROM fts_tenants WHERE tenant_id = ?", (tenant_id,)).fetchone()
        counted = conn.execute("SELECT COUNT(*) FROM docs WHERE tenant_id = ?", (tenant_id,)).fetchone()[0]
        return fts_rows(conn, f"docs_fts_{n}"), int(counted)
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


def test_the_term_counts_kept_between_searches_follow_every_write(tmp_path: Path) -> None:
    index = SQLiteMemoryIndex(tmp_path / "index.sqlite3", 8)
    index.ensure_schema()
    query = IndexQuery(tenant_id="t", filter=MemoryFilter(), limit=3, text="green tea")

    def write(*contents: str) -> None:
        index.upsert(
            [IndexDocument(make_memory(c, memory_id=c, tenant_id="t"), unit_vector(1, 8)) for c in contents]
        )

    def ceiling() -> float:
        return index.search(query).keyword_ceiling

    write("green tea", "black tea", "coffee")
    assert ceiling() == CorpusStats(rows=3, terms=0, hits=(1, 2)).ceiling()
    assert ceiling() == CorpusStats(rows=3, terms=0, hits=(1, 2)).ceiling()  # from the kept counts
    write("green salad", "mint tea")
    assert ceiling() == CorpusStats(rows=5, terms=0, hits=(2, 3)).ceiling()
    index.delete("t", ["green tea", "green salad"])
    assert ceiling() == CorpusStats(rows=3, terms=0, hits=(0, 2)).ceiling()
    index.close()


def test_index_connections_keep_a_page_cache_for_the_posting_lists(tmp_path: Path) -> None:
    """Every index connection (the writer and each reader) caches INDEX_CACHE_MIB; the store keeps SQLite's."""
    index = SQLiteMemoryIndex(tmp_path / "index.sqlite3", 8)
    index.ensure_schema()
    with index._db.locked() as writer, index._db.reading() as reader:
        sizes = {conn.execute("PRAGMA cache_size").fetchone()[0] for conn in (writer, reader)}
    assert sizes == {-1024 * INDEX_CACHE_MIB}
    store = SQLiteMemoryStore(tmp_path / "store.sqlite3")
    with store._db.reading() as conn:
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -2000
