"""A running server sees what another process wrote to its data directory (issue 45, item 9).

`rearview import`, `Memory(data_dir=...)` or a second process write the same SQLite files through
connections of their own. The server's per-tenant vector matrix and keyword counts are caches of
the index file: its next search must see those writes (found, and merged into instead of
duplicated), and must stop returning what the other process deleted.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from rearview import Memory
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.models import MemoryFilter, WriteAction
from rearview.ports import IndexDocument, IndexQuery
from tests.e2e.server import running_server
from tests.factories import make_memory, unit_vector

DIMENSION = 32


def _vector_ids(index: SQLiteMemoryIndex, text: str | None = None) -> list[str]:
    hits = index.search(IndexQuery("t1", MemoryFilter(), 10, vector=unit_vector(3), text=text))
    return [memory_id for memory_id, _ in hits.vector]


def test_an_index_sees_another_connections_upserts_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    serving, other = SQLiteMemoryIndex(path, DIMENSION), SQLiteMemoryIndex(path, DIMENSION)
    serving.ensure_schema()
    serving.upsert([IndexDocument(make_memory("tea notes", memory_id="a"), unit_vector(1))])
    assert _vector_ids(serving) == ["a"]  # the tenant's matrix is now loaded and cached

    other.upsert([IndexDocument(make_memory("tea ceremony", memory_id="b"), unit_vector(3))])
    assert _vector_ids(serving)[0] == "b"
    before = serving.search(IndexQuery("t1", MemoryFilter(), 10, text="ceremony")).keyword_ceiling

    other.upsert(
        [IndexDocument(make_memory(f"coffee {i}", memory_id=f"c{i}"), unit_vector(9)) for i in range(5)]
    )
    after = serving.search(IndexQuery("t1", MemoryFilter(), 10, text="ceremony")).keyword_ceiling
    assert after > before  # the counts were read again: "ceremony" is in 1 of 7 rows now, not 1 of 2

    other.erase("t1", ["b"])
    assert "b" not in _vector_ids(serving)
    serving.upsert([IndexDocument(make_memory("tea again", memory_id="d"), unit_vector(4))])
    assert "d" in _vector_ids(serving) and "b" not in _vector_ids(serving)  # own writes still apply


def test_a_running_server_finds_and_merges_into_another_processs_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running_server(data) as url, Memory(url=url) as served:
        served.write("Deploys run on Fridays after the freeze")
        assert served.search("when do deploys run").results  # matrices loaded before the other write

        code = textwrap.dedent(
            f"""
            from rearview import Memory
            from rearview.config.settings import Settings
            with Memory(settings=Settings.load(data_dir={str(data)!r}, embedder="hashing")) as m:
                print(m.write("Ana's cat is called Mochi and sleeps on the piano").id)
            """
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        written = done.stdout.strip()

        found = served.search("Mochi the cat sleeps on the piano")
        assert [r.id for r in found.results][:1] == [written]
        again = served.write("Ana's cat is called Mochi and she sleeps on the piano")  # a near duplicate
        assert again.action is WriteAction.MERGED and again.id == written
