"""A slow keyword query on the embedded index stalls nobody (issue 10, defect 3, the lock part).

The query is made slow deterministically: an SQLite progress handler on its connection parks it
mid-statement until the test releases it. While it is parked, a write and another tenant's
keyword search must complete. Timeouts only keep a regression from hanging the run.
"""

from __future__ import annotations

import threading
from pathlib import Path

from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.models import MemoryFilter
from rearview.ports import ChannelHits, IndexDocument, IndexQuery
from tests.factories import make_memory, unit_vector

DIMENSION = 32
PATIENCE_S = 20.0  # how long a broken build waits before the assertions report it


def test_a_write_and_another_tenants_search_complete_while_a_keyword_query_runs(tmp_path: Path) -> None:
    index = SQLiteMemoryIndex(tmp_path / "index.sqlite3", DIMENSION)
    index.ensure_schema()
    index.upsert(
        [
            IndexDocument(make_memory(f"deploy notes {i}", memory_id=f"a{i}"), unit_vector(i))
            for i in range(50)
        ]
        + [IndexDocument(make_memory("deploy notes", tenant_id="t2", memory_id="b"), unit_vector(99))]
    )
    parked, release = threading.Event(), threading.Event()
    order: list[str] = []

    def park() -> int:
        if not parked.is_set():
            order.append("query parked")
            parked.set()
            release.wait(PATIENCE_S)
        return 0  # go on

    with index._db.reading() as conn:  # the pooled read connection the next query takes
        conn.set_progress_handler(park, 10)
    slow_hits: list[ChannelHits] = []
    slow = threading.Thread(
        target=lambda: slow_hits.append(
            index.search(IndexQuery("t1", MemoryFilter(), 100, text="deploy notes"))
        )
    )
    slow.start()
    try:
        assert parked.wait(PATIENCE_S)

        def write_and_search() -> None:
            index.upsert([IndexDocument(make_memory("deploy runbook", memory_id="new"), unit_vector(7))])
            order.append("write done")
            other = index.search(IndexQuery("t2", MemoryFilter(), 10, text="deploy"))
            order.append(f"t2 search done: {[i for i, _ in other.keyword]}")

        other = threading.Thread(target=write_and_search)
        other.start()
        other.join(PATIENCE_S)
    finally:
        release.set()
        slow.join(PATIENCE_S)
    order.append("query done")

    assert order == ["query parked", "write done", "t2 search done: ['b']", "query done"]
    assert {f"a{i}" for i in range(50)} <= {i for i, _ in slow_hits[0].keyword}
    assert "new" in [i for i, _ in index.search(IndexQuery("t1", MemoryFilter(), 100, text="deploy")).keyword]
    index.close()
