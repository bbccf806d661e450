"""A hard forget leaves no copy of the text anywhere in the embedded data directory (issue 10, defect 6).

Through `MemoryService.forget(hard=True)` on the embedded backends (SQLite store, FTS5 index,
directory archive): every byte of every file under the data directory is searched, the store's
and index's write-ahead logs and the decompressed archive objects included.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

from rearview.bootstrap import build_lifecycle, build_service
from rearview.config.settings import Settings
from rearview.models import ForgetRequest, UpdateRequest, WriteRequest

TENANT = "default"


def _secret(seed: int) -> str:
    """A word no stemmer or tokenizer rewrites (consonants only), unique to this test."""
    return "zq" + "".join(random.Random(seed).choices("bcdfghjkmnpqrtvwxz", k=14))


def _files_holding(data_dir: Path, text: str) -> list[str]:
    """Files whose bytes (or, for gzip objects, decompressed bytes) contain `text`."""
    needle = text.encode()
    found = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        try:
            body = path.read_bytes()
        except FileNotFoundError:  # a `-shm`/`-wal` file removed as its last connection closed
            continue
        if path.suffix == ".gz":
            body += gzip.decompress(body)
        if needle in body:
            found.append(path.relative_to(data_dir).as_posix())
    return found


def test_hard_forget_leaves_no_copy_in_store_index_logs_or_archive(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings.load(data_dir=data, embedder="hashing")
    service = build_service(settings)
    archived, first, rewritten, kept = (_secret(n) for n in range(4))

    # One secret reaches the archive (in an object shared with a memory that stays)...
    doomed = service.write(TENANT, WriteRequest(content=f"The vault code is {archived}", ttl_days=0.05))
    service.write(TENANT, WriteRequest(content=f"The locker code is {kept}", ttl_days=0.05))
    assert build_lifecycle(settings, service).apply_retention(TENANT).archived == 2
    # ... another is updated, so older versions of it sit in history and in freed pages.
    live = service.write(TENANT, WriteRequest(content=f"The door code is {first}"))
    service.update(TENANT, UpdateRequest(memory_id=live.memory.id, content=f"The door code is {rewritten}"))
    service.write(TENANT, WriteRequest(content="The printer is on the third floor"))

    for secret in (archived, first, rewritten):
        assert _files_holding(data, secret), f"{secret} should be on disk before the forget"
    assert any(name.startswith("index-") for name in _files_holding(data, rewritten))
    assert any(name.endswith("-wal") for name in _files_holding(data, first))
    assert any(name.startswith("archive/") for name in _files_holding(data, archived))

    service.forget(TENANT, ForgetRequest(ids=[doomed.memory.id, live.memory.id], hard=True))

    for secret in (archived, first, rewritten):
        assert _files_holding(data, secret) == [], secret
    assert any(name.startswith("archive/") for name in _files_holding(data, kept))


def _fts_shadow_blocks(data: Path) -> list[bytes]:
    """Every block of every FTS5 shadow table of the index file (segments, vocabulary, docsizes...)."""
    import sqlite3

    index = next(p for p in data.iterdir() if p.name.startswith("index-") and p.suffix == ".sqlite3")
    with sqlite3.connect(index) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE name LIKE 'docs_fts_%\\_%' ESCAPE '\\'"
            )
        ]
        return [bytes(str(v), "utf-8") if not isinstance(v, bytes) else v
                for t in tables if t.endswith(("_data", "_idx", "_content", "_docsize", "_config"))
                for row in conn.execute(f"SELECT * FROM {t}") for v in row if v is not None]  # fmt: skip


def test_hard_forget_leaves_no_word_in_a_session_neighbours_rebuilt_context(tmp_path: Path) -> None:
    """Neighbours index each other's words as keyword context: the rebuilt context must not leave them behind.

    On SQLite before 3.42 (no FTS5 `secure-delete`) a neighbour's replaced context stays in the
    segments until they are merged: the erasure compacts after rebuilding the neighbours.
    """
    data = tmp_path / "data"
    service = build_service(Settings.load(data_dir=data, embedder="hashing"))
    secret = _secret(7)
    doomed = service.write(
        TENANT, WriteRequest(content=f"The alarm code is {secret}", type="episodic", session_id="s1")
    )
    service.write(TENANT, WriteRequest(content="The office opens at eight", type="episodic", session_id="s1"))
    service.write(
        TENANT, WriteRequest(content="Lunch is at noon on Fridays", type="episodic", session_id="s1")
    )
    assert any(secret.encode() in block for block in _fts_shadow_blocks(data))

    service.forget(TENANT, ForgetRequest(ids=[doomed.memory.id], hard=True))

    assert not any(secret.encode() in block for block in _fts_shadow_blocks(data))
    assert _files_holding(data, secret) == []
