"""A full disk or a read-only data directory keeps the error contract (issue 24, item 9).

Before: `sqlite3.OperationalError: database or disk is full` reached clients as a bare "Error
executing tool memory_write" with no kind, `memory_search` failed too (its reinforcement is a
write), and `rearview serve` on a read-only data directory died with a traceback. Now a storage
error is a tool error with its kind and reason (`storage_full`, `read_only`), recall still answers
(reinforcement is best-effort), and the server refuses to start with one clear line.

The full disk is SQLite's own `SQLITE_FULL` (the store's connection is capped at the pages it has,
`PRAGMA max_page_count`), served over real HTTP to the official `mcp` client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from tests.e2e.server import serving
from tests.mcp_client import blocking_client

MODE = "2026-07-28"


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[str, SQLiteMemoryStore]]:
    """A served SQLite-backed Rearview holding one memory, whose store file cannot grow any more."""
    service = build_service(Settings.load(data_dir=tmp_path / "data", embedder="hashing"))
    store = service.store
    assert isinstance(store, SQLiteMemoryStore)
    with serving(create_app(service, ApiKeyResolver({}, "local"))) as url:
        with blocking_client(url, MODE) as client:
            client.call("memory_write", {"content": "The deploy window is Thursday at 10:00"})
        with store._db.locked() as conn:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
        yield url, store


def test_a_write_on_a_full_disk_is_a_storage_full_error_with_its_reason(
    full_disk: tuple[str, SQLiteMemoryStore],
) -> None:
    url, store = full_disk
    with blocking_client(url, MODE) as client:
        message = client.error("memory_write", {"content": "a long note that needs new pages " * 100})
    assert "memory_write: storage_full: " in message
    assert "disk is full" in message and "nothing was written" in message
    assert store.stats("local").total == 1


def test_recall_still_answers_on_a_full_disk(full_disk: tuple[str, SQLiteMemoryStore]) -> None:
    url, store = full_disk
    with store._db.locked() as conn:  # not even a page's worth of room: every write fails
        conn.execute("PRAGMA max_page_count = 1")
    with blocking_client(url, MODE) as client:
        found = client.call("memory_search", {"query": "when is the deploy window"})
    assert [hit["content"] for hit in found["results"]] == ["The deploy window is Thursday at 10:00"]


def test_serving_a_read_only_data_directory_says_so(tmp_path: Path) -> None:
    """`rearview serve` exits with one line naming the read-only directory, not a traceback.

    As root, permissions do not stop writes: the server then runs as `nobody` (setpriv).
    """
    root = Path(tempfile.mkdtemp(prefix="rv-readonly-"))  # outside pytest's 0700 tmp: `nobody` reads it
    try:
        data = root / "data"
        build_service(Settings.load(data_dir=data, embedder="hashing")).store.stats("local")
        for path in [data, *data.iterdir()]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        root.chmod(0o755)
        command = [sys.executable, "-m", "rearview.cli", "serve", "--data-dir", str(data), "--port", "0"]
        if os.geteuid() == 0:
            if shutil.which("setpriv") is None:
                pytest.skip("running as root without setpriv: a read-only directory cannot be made")
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
        env = {**os.environ, "HOME": str(root), "REARVIEW_EMBEDDER": "hashing"}
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=60, env=env, cwd=root
        )
    finally:
        for path in root.rglob("*"):
            path.chmod(0o755)
        shutil.rmtree(root)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert f"the data directory {data} is read-only" in done.stderr, done.stderr
