"""Rows as an older SQLite store schema held them, for the migration tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rearview.backends.sqlite_common import SQLiteDatabase
from rearview.backends.sqlite_store import _COLUMNS, _MIGRATIONS, _row
from rearview.models import Memory


def older_store(path: Path, migrations: int, memories: list[Memory]) -> None:
    """Create the store at `path` with its first `migrations` only, holding `memories` as it stored them.

    A row carries only the columns that schema's `memories` table has (read from the table, so a later
    column needs no change here).
    """
    db = SQLiteDatabase(path)
    db.migrate("store", _MIGRATIONS[:migrations])
    with db.transaction() as conn:
        for memory in memories:
            _insert(conn, memory)
    db.close()


def _insert(conn: sqlite3.Connection, memory: Memory) -> None:
    present = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    pairs = [(c, v) for c, v in zip(_COLUMNS.split(", "), _row(memory), strict=True) if c in present]
    names, marks = ", ".join(c for c, _ in pairs), ",".join("?" * len(pairs))
    conn.execute(f"INSERT INTO memories ({names}) VALUES ({marks})", [v for _, v in pairs])
