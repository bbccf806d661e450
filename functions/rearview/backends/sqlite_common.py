"""Shared SQLite plumbing for the embedded backend: connections, schema versions, filter SQL."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from rearview.errors import BackendError, ReadOnlyStorageError, StorageFullError, StoreError
from rearview.models import MemoryFilter

Migration = str | Callable[[sqlite3.Connection], None]
"""One schema step: a SQL script, or a function run on the migrating connection (inside its transaction)."""


class SQLiteDatabase:
    """One SQLite file in WAL mode. Opening is lazy (no I/O in __init__).

    Writes (and reads that must see them atomically with a write) go through `conn`, shared by
    threads behind `lock`. Long reads go through `reading()`: pooled connections of their own,
    which WAL lets run beside the writer, so a slow query never holds `lock`.
    Every connection has `secure_delete` on: deleted content is overwritten with zeros, and a page
    cache of `cache_mib` MiB (SQLite's default, 2 MiB, when None).

    SQLite failures are translated at this boundary (`translate_errors`, also around every
    `transaction()` and `reading()`): a full disk is `StorageFullError`, a read-only file or data
    directory `ReadOnlyStorageError`, anything else `error` (the store's `StoreError`, the index's
    `IndexUnavailableError`, so search degrades), each naming the file and SQLite's reason.
    """

    def __init__(
        self, path: str | Path, error: type[BackendError] = StoreError, cache_mib: int | None = None
    ) -> None:
        self.path = str(path)
        self._error = error
        self._cache_mib = cache_mib
        self._conn: sqlite3.Connection | None = None
        self.lock = threading.RLock()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._data_version: int | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, opened on first use."""
        if self._conn is None:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = self._connect()
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._conn = conn
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA secure_delete=ON")
        if self._cache_mib is not None:
            conn.execute(f"PRAGMA cache_size={-1024 * self._cache_mib}")  # negative: KiB, not pages
        return conn

    @contextmanager
    def translate_errors(self) -> Iterator[None]:
        """Raise SQLite's errors inside the block as Rearview's (see the class docstring)."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._translated(exc) from exc

    def _translated(self, exc: sqlite3.Error) -> BackendError:
        name = getattr(exc, "sqlite_errorname", "")
        text = str(exc)
        folder = Path(self.path).parent
        store = issubclass(self._error, StoreError)  # the index reports everything as its own error
        if name == "SQLITE_FULL" or "disk is full" in text:
            reason = f"{self.path}: the disk is full ({text}); nothing was written"
            return StorageFullError(reason) if store else self._error(reason)
        if (
            name.startswith("SQLITE_READONLY")
            or "readonly" in text
            or (self.path != ":memory:" and not os.access(folder, os.W_OK))
        ):
            reason = (
                f"{self.path}: the data directory {folder} is read-only ({text}); make it writable"
                " or point REARVIEW_DATA_DIR at a writable one"
            )
            return ReadOnlyStorageError(reason) if store else self._error(reason)
        return self._error(f"{self.path}: {text}")

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The shared connection under `lock`, its errors translated (short reads and writes)."""
        with self.lock, self.translate_errors():
            yield self.conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A read connection of this caller's own for the duration of the block (no shared lock).

        It sees what was committed when its query started. An in-memory database has a single
        connection, so there it is `conn` under `lock`.
        """
        if self.path == ":memory:":
            with self.locked() as conn:
                yield conn
            return
        with self.translate_errors():
            if self._conn is None:  # the writer opens the file first: it creates the folders, sets WAL
                with self.lock:
                    _ = self.conn
            with self._readers_lock:
                reader = self._readers.pop() if self._readers else None
            if reader is None:
                reader = self._connect()
            try:
                yield reader
            finally:
                with self._readers_lock:
                    self._readers.append(reader)

    def changed_elsewhere(self) -> bool:
        """Whether another connection committed to the file since the last call (False the first time).

        Another connection is another process (`rearview import`, `Memory()`), or another object on
        the same file. SQLite's `data_version` on `conn`: this object's own commits (all through
        `conn`) do not move it, anyone else's do, so state derived from the file can be kept until then.
        """
        if self.path == ":memory:":
            return False  # no other connection can reach it
        with self.locked() as conn:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        changed = self._data_version is not None and version != self._data_version
        self._data_version = version
        return changed

    def truncate_wal(self) -> None:
        """Copy the write-ahead log into the file and truncate it to zero bytes.

        After a delete this removes the deleted content's older page images from the log.
        Raises StoreError if readers kept it from completing within the busy timeout.
        """
        with self.locked() as conn:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise StoreError(f"{self.path}: readers kept the write-ahead log from being truncated; retry")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (nothing of it is written then)."""
        with self.locked() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")  # may fail too (a full disk): then it is rolled back below
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back itself (e.g. on SQLITE_FULL)
                    conn.execute("ROLLBACK")
                raise

    def migrate(self, name: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations not yet applied to schema `name`, in order, in one transaction.

        A migration is a script (statements separated by `;`) or a function of the connection.
        A schema that is already current is only read: nothing is written on an up-to-date file.
        """
        if self._version(name) == len(migrations):
            return
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (name TEXT PRIMARY KEY, version INTEGER)")
            row = conn.execute("SELECT version FROM schema_version WHERE name = ?", (name,)).fetchone()
            current = row[0] if row else 0
            if current > len(migrations):
                raise StoreError(f"{self.path}: schema {name} v{current} is newer than this Rearview")
            for migration in migrations[current:]:
                if callable(migration):
                    migration(conn)
                    continue
                for statement in filter(str.strip, migration.split(";")):
                    conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO schema_version VALUES (?, ?)", (name, len(migrations)))

    def _version(self, name: str) -> int | None:
        """The applied version of schema `name` (None: no schema table or no row yet)."""
        with self.locked() as conn:
            exists = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if exists is None:
                return None
            row = conn.execute("SELECT version FROM schema_version WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def close(self) -> None:
        """Close the connections (reopened on next use); call it when no read is in progress."""
        with self.lock, self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def epoch(when: datetime | None) -> float | None:
    """Seconds since the epoch (None stays None)."""
    return None if when is None else when.timestamp()


def filter_sql(flt: MemoryFilter, alias: str) -> tuple[str, list[object]]:
    """SQL conditions (ANDed) and parameters reproducing `MemoryFilter.matches` on a row alias.

    The row must have columns agent_id, visibility, session_id, type, status, scope_key,
    event_time (epoch), tags (JSON array) and, for `as_of`, created_at and updated_at (epoch).
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
    if flt.as_of is not None:  # `models.memory.as_of_matches`
        clauses.append(f"{a}.created_at <= ? AND ({a}.status = 'active' OR {a}.updated_at > ?)")
        params.extend([flt.as_of.timestamp(), flt.as_of.timestamp()])
    return " AND ".join(clauses), params
