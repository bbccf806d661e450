"""Shared SQLite plumbing for the embedded backend: connections, schema versions, filter SQL."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from rearview.errors import StoreError
from rearview.models import MemoryFilter


class SQLiteDatabase:
    """One SQLite file in WAL mode, shared by threads behind a lock. Opening is lazy (no I/O in __init__)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._conn: sqlite3.Connection | None = None
        self.lock = threading.RLock()

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, opened on first use."""
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            self._conn = conn
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
        with self.lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def migrate(self, name: str, migrations: list[str]) -> None:
        """Apply the migrations not yet applied to schema `name` (each one a script, in order)."""
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (name TEXT PRIMARY KEY, version INTEGER)")
            row = conn.execute("SELECT version FROM schema_version WHERE name = ?", (name,)).fetchone()
            current = row[0] if row else 0
            if current > len(migrations):
                raise StoreError(f"{self.path}: schema {name} v{current} is newer than this Rearview")
            for script in migrations[current:]:
                for statement in filter(str.strip, script.split(";")):
                    conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO schema_version VALUES (?, ?)", (name, len(migrations)))

    def close(self) -> None:
        """Close the connection (reopened on next use)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def epoch(when: datetime | None) -> float | None:
    """Seconds since the epoch (None stays None)."""
    return None if when is None else when.timestamp()


def filter_sql(flt: MemoryFilter, alias: str) -> tuple[str, list[object]]:
    """SQL conditions (ANDed) and parameters reproducing `MemoryFilter.matches` on a row alias.

    The row must have columns agent_id, visibility, session_id, type, status, scope_key,
    event_time (epoch) and tags (JSON array).
    """
    a = alias
    clauses: list[str] = []
    params: list[object] = []
    if flt.agent_id is not None:
        clauses.append(f"({a}.visibility = 'shared' OR {a}.agent_id = ?)")
        params.append(flt.agent_id)
    if flt.session_id is not None:
        clauses.append(f"{a}.session_id = ?")
        params.append(flt.session_id)
    if flt.types is not None:
        clauses.append(f"{a}.type IN ({','.join('?' * len(flt.types))})")
        params.extend(t.value for t in flt.types)
    clauses.append(f"{a}.status IN ({','.join('?' * len(flt.statuses))})")
    params.extend(s.value for s in flt.statuses)
    for tag in flt.tags or ():
        clauses.append(f"EXISTS (SELECT 1 FROM json_each({a}.tags) WHERE value = ?)")
        params.append(tag)
    if flt.time_from is not None:
        clauses.append(f"{a}.event_time >= ?")
        params.append(flt.time_from.timestamp())
    if flt.time_to is not None:
        clauses.append(f"{a}.event_time <= ?")
        params.append(flt.time_to.timestamp())
    if flt.scope_key is not None:
        clauses.append(f"{a}.scope_key = ?")
        params.append(flt.scope_key)
    return " AND ".join(clauses), params
