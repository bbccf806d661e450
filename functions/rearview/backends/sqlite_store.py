"""SQLiteMemoryStore: the embedded source of truth (one file, WAL, versioned schema).

Each memory is one row: indexed columns for lookups and filters, plus the full record as JSON.
History events are rows of their own. Every statement is scoped by `tenant_id`.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rearview.backends.due_order import DUE_STATUSES, decode_due_cursor, encode_due_cursor
from rearview.backends.sqlite_common import Migration, SQLiteDatabase, epoch, filter_sql
from rearview.errors import ConflictError, InvalidInputError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryType, Page, StoreStats, Visibility
from rearview.ports import DueAt, DueJob, StoreWrite, Touch
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.scopes import scope_key


def _rekey_scopes(conn: sqlite3.Connection) -> None:
    """Re-key every memory whose dedup scope key was ambiguous (`rearview.shared.scopes`, issue 24)."""
    rows = conn.execute(
        "SELECT tenant_id, id, type, visibility, agent_id, session_id, scope_key FROM memories"
    )
    for tenant_id, memory_id, type_, visibility, agent_id, session_id, old in rows.fetchall():
        new = scope_key(MemoryType(type_), Visibility(visibility), agent_id, session_id)
        if new != old:
            conn.execute(
                "UPDATE memories SET scope_key = ?, body = json_set(body, '$.scope_key', ?)"
                " WHERE tenant_id = ? AND id = ?",
                (new, new, tenant_id, memory_id),
            )


_MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE memories (
        tenant_id TEXT NOT NULL, id TEXT NOT NULL,
        scope_key TEXT NOT NULL, content_hash TEXT NOT NULL, idempotency_key TEXT,
        agent_id TEXT NOT NULL, visibility TEXT NOT NULL, session_id TEXT,
        type TEXT NOT NULL, status TEXT NOT NULL, tags TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, event_time REAL NOT NULL, expires_at REAL,
        version INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tenant_id, id)
    ) WITHOUT ROWID;
    CREATE INDEX memories_by_hash ON memories (tenant_id, scope_key, content_hash);
    CREATE UNIQUE INDEX memories_by_idempotency_key ON memories (tenant_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE INDEX memories_by_updated ON memories (tenant_id, updated_at DESC, id DESC);
    CREATE INDEX memories_by_session ON memories (tenant_id, session_id, updated_at DESC);
    CREATE INDEX memories_by_expiry ON memories (tenant_id, expires_at);
    CREATE TABLE history (
        tenant_id TEXT NOT NULL, memory_id TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tenant_id, memory_id, id)
    ) WITHOUT ROWID
    """,
    _rekey_scopes,
    # Lineage (`derived_ids`): a derived memory found from each of its sources, by key, not by a scan.
    """
    CREATE TABLE lineage (
        tenant_id TEXT NOT NULL, source_id TEXT NOT NULL, memory_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, source_id, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX lineage_by_memory ON lineage (tenant_id, memory_id);
    INSERT OR IGNORE INTO lineage
        SELECT m.tenant_id, j.value, m.id FROM memories m, json_each(m.body, '$.derived_from') j
    """,
    # The decay job's due order (`list_due`): every live memory is due once, at its last write.
    """
    ALTER TABLE memories ADD COLUMN fade_at REAL;
    UPDATE memories SET fade_at = updated_at WHERE status IN ('active', 'superseded');
    CREATE INDEX memories_by_fade ON memories (tenant_id, fade_at) WHERE fade_at IS NOT NULL
    """,
]

_COLUMNS = (
    "tenant_id, id, scope_key, content_hash, idempotency_key, agent_id, visibility, session_id, type, "
    "status, tags, created_at, updated_at, event_time, expires_at, version, body, fade_at"
)


def _row(m: Memory) -> tuple[object, ...]:
    return (
        m.tenant_id,
        m.id,
        m.scope_key,
        m.content_hash,
        m.idempotency_key,
        m.agent_id,
        m.visibility.value,
        m.session_id,
        m.type.value,
        m.status.value,
        json.dumps(m.tags),
        epoch(m.created_at),
        epoch(m.updated_at),
        epoch(m.event_time),
        epoch(m.expires_at),
        m.version,
        m.model_dump_json(),
        epoch(m.updated_at) if m.status in DUE_STATUSES else None,  # due for decay: examined once
    )


class SQLiteMemoryStore:
    """`MemoryStore` on one SQLite file. Expired rows read as absent; `commit` is one transaction."""

    def __init__(self, path: str | Path, clock: Clock | None = None) -> None:
        self._db = SQLiteDatabase(path)
        self._clock = clock or SystemClock()

    def ensure_schema(self) -> None:
        self._db.migrate("store", _MIGRATIONS)

    def close(self) -> None:
        """Close the underlying connection."""
        self._db.close()

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        with self._db.transaction() as conn:
            for w in writes:
                m = w.memory
                row = conn.execute(
                    "SELECT version FROM memories WHERE tenant_id = ? AND id = ?", (m.tenant_id, m.id)
                ).fetchone()
                actual = row[0] if row else None
                if actual != w.expected_version:
                    raise ConflictError(m.id, w.expected_version, actual)
                conn.execute(
                    f"INSERT OR REPLACE INTO memories ({_COLUMNS}) VALUES ({','.join('?' * 18)})", _row(m)
                )
                if m.derived_from:
                    conn.executemany(
                        "INSERT OR IGNORE INTO lineage VALUES (?, ?, ?)",
                        [(m.tenant_id, source_id, m.id) for source_id in m.derived_from],
                    )
                if w.event is not None:
                    conn.execute(
                        "INSERT INTO history VALUES (?, ?, ?, ?)",
                        (m.tenant_id, m.id, w.event.id, w.event.model_dump_json()),
                    )

    def _select(
        self, where: str, params: Sequence[object], suffix: str = "", index: str | None = None
    ) -> list[Memory]:
        # `index` pins the plan: without ANALYZE statistics SQLite prefers the primary key's
        # tenant prefix, i.e. reads a whole tenant (seconds at 100k memories) for a point lookup.
        source = f"memories m INDEXED BY {index}" if index else "memories m"
        sql = (
            f"SELECT body FROM {source} WHERE m.tenant_id = ? AND (m.expires_at IS NULL OR m.expires_at > ?)"
        )
        with self._db.reading() as conn:  # a reader of its own: searches do not queue behind writes
            rows = conn.execute(f"{sql} AND {where} {suffix}", params).fetchall()
        return [Memory.model_validate_json(r[0]) for r in rows]

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        found = self._select("m.id = ?", (tenant_id, self._now(), memory_id))
        return found[0] if found else None

    def get_many(self, tenant_id: str, memory_ids: Sequence[str], *, recalls: bool = True) -> list[Memory]:
        """The memories (recalls live in the row: `recalls` changes nothing here)."""
        ids = list(dict.fromkeys(memory_ids))
        out: list[Memory] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            out += self._select(f"m.id IN ({','.join('?' * len(chunk))})", (tenant_id, self._now(), *chunk))
        return out

    def find_by_hash(
        self, tenant_id: str, scope_key: str, content_hash: str, agent_id: str | None = None
    ) -> Memory | None:
        writer = "" if agent_id is None else " AND m.agent_id = ?"
        found = self._select(
            "m.scope_key = ? AND m.content_hash = ? AND m.status = 'active'" + writer,
            (tenant_id, self._now(), scope_key, content_hash, *([] if agent_id is None else [agent_id])),
            "LIMIT 1",
            index="memories_by_hash",
        )
        return found[0] if found else None

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        return self.find_by_idempotency_keys(tenant_id, [key]).get(key)

    def list_expired(self, tenant_id: str, limit: int = 100) -> list[Memory]:
        sql = (
            "SELECT body FROM memories INDEXED BY memories_by_expiry WHERE tenant_id = ? "
            "AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?"
        )
        with self._db.reading() as conn:
            rows = conn.execute(sql, (tenant_id, self._now(), limit)).fetchall()
        return [Memory.model_validate_json(r[0]) for r in rows]

    def list_due(
        self, tenant_id: str, job: DueJob, before: datetime, cursor: str | None = None, limit: int = 100
    ) -> Page:
        column, index = (
            ("expires_at", "memories_by_expiry") if job == "archive" else ("fade_at", "memories_by_fade")
        )
        where = f"m.{column} IS NOT NULL AND m.{column} <= ? AND m.status IN ('active', 'superseded')"
        params: list[object] = [epoch(before)]
        after = decode_due_cursor(cursor)
        if after is not None:
            where += f" AND (m.{column}, m.id) > (?, ?)"  # a row value: the index seeks to the page
            params += [float(after[0]), after[1]]
        source = f"memories m INDEXED BY {index}"
        sql = (
            f"SELECT body, {column} FROM {source} WHERE m.tenant_id = ? "
            f"AND (m.expires_at IS NULL OR m.expires_at > ?) AND {where} "
            f"ORDER BY m.{column}, m.id LIMIT {limit + 1}"
        )
        with self._db.reading() as conn:
            rows = conn.execute(sql, (tenant_id, self._now(), *params)).fetchall()
        items = [Memory.model_validate_json(r[0]) for r in rows[:limit]]
        if len(rows) <= limit:
            return Page(items=items)
        return Page(items=items, cursor=encode_due_cursor(repr(rows[limit - 1][1]), items[-1].id))

    def schedule(self, tenant_id: str, entries: Sequence[DueAt]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE memories SET fade_at = ? WHERE tenant_id = ? AND id = ? AND version = ?"
                " AND status IN ('active', 'superseded')",
                [(epoch(e.due), tenant_id, e.memory_id, e.version) for e in entries],
            )

    def find_by_idempotency_keys(self, tenant_id: str, keys: Sequence[str]) -> dict[str, Memory]:
        unique = list(dict.fromkeys(keys))
        out: dict[str, Memory] = {}
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            found = self._select(
                f"m.idempotency_key IN ({','.join('?' * len(chunk))})",
                (tenant_id, self._now(), *chunk),
                index="memories_by_idempotency_key",
            )
            out.update((m.idempotency_key, m) for m in found if m.idempotency_key is not None)
        return out

    def list_memories(
        self,
        tenant_id: str,
        filter: MemoryFilter,
        cursor: str | None = None,
        limit: int = 100,
        *,
        oldest_first: bool = False,
    ) -> Page:
        where, params = filter_sql(filter, "m")
        past, order = (">", "ASC") if oldest_first else ("<", "DESC")
        if cursor is not None:
            updated, last_id = _decode_cursor(cursor)
            # A row value, not `a < ? OR (a = ? AND id < ?)`: SQLite seeks the index to the page with
            # it, where the OR made every page walk the tenant from its start (quadratic in the tenant).
            where += f" AND (m.updated_at, m.id) {past} (?, ?)"
            params += [updated, last_id]
        items = self._select(
            where,
            (tenant_id, self._now(), *params),
            f"ORDER BY m.updated_at {order}, m.id {order} LIMIT {limit + 1}",
            index="memories_by_session" if filter.session_id is not None else "memories_by_updated",
        )
        if len(items) <= limit:
            return Page(items=items)
        last = items[limit - 1]
        return Page(items=items[:limit], cursor=_encode_cursor(last.updated_at.timestamp(), last.id))

    def history(self, tenant_id: str, memory_id: str) -> list[HistoryEvent]:
        with self._db.locked() as conn:
            rows = conn.execute(
                "SELECT body FROM history WHERE tenant_id = ? AND memory_id = ? ORDER BY id",
                (tenant_id, memory_id),
            ).fetchall()
        return [HistoryEvent.model_validate_json(r[0]) for r in rows]

    def touch(self, tenant_id: str, touches: Sequence[Touch]) -> None:
        """Set each memory's recall fields in its body, where the touch `is_after` the recall it holds."""
        with self._db.transaction() as conn:
            for t in touches:
                held = conn.execute(
                    "SELECT json_extract(body, '$.last_accessed_at'), json_extract(body, '$.access_count')"
                    " FROM memories WHERE tenant_id = ? AND id = ?",
                    (tenant_id, t.memory_id),
                ).fetchone()
                if held is None or not t.is_after(datetime.fromisoformat(held[0]), int(held[1] or 0)):
                    continue
                conn.execute(
                    "UPDATE memories SET body = json_set(body, '$.strength', ?, '$.last_accessed_at', ?,"
                    " '$.access_count', ?) WHERE tenant_id = ? AND id = ?",
                    (t.strength, t.last_accessed_at.isoformat(), t.access_count, tenant_id, t.memory_id),
                )

    def purge(self, tenant_id: str, memory_id: str) -> None:
        """Hard delete, leaving no copy in the file or its write-ahead log once it returns.

        `secure_delete` zeroes the freed space; the log, which still holds the pages as they were
        before, is then checkpointed and truncated (StoreError if readers keep it busy: repeat).
        """
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM memories WHERE tenant_id = ? AND id = ?", (tenant_id, memory_id))
            conn.execute("DELETE FROM history WHERE tenant_id = ? AND memory_id = ?", (tenant_id, memory_id))
            conn.execute("DELETE FROM lineage WHERE tenant_id = ? AND source_id = ?", (tenant_id, memory_id))
            conn.execute("DELETE FROM lineage WHERE tenant_id = ? AND memory_id = ?", (tenant_id, memory_id))
        self._db.truncate_wal()

    def derived_ids(self, tenant_id: str, source_id: str) -> list[str]:
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT memory_id FROM lineage WHERE tenant_id = ? AND source_id = ?", (tenant_id, source_id)
            ).fetchall()
        return [r[0] for r in rows]

    def rewrite_history(self, tenant_id: str, memory_id: str, events: Sequence[HistoryEvent]) -> None:
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE history SET body = ? WHERE tenant_id = ? AND memory_id = ? AND id = ?",
                [(e.model_dump_json(), tenant_id, memory_id, e.id) for e in events],
            )

    def stats(self, tenant_id: str) -> StoreStats:
        live = "tenant_id = ? AND (expires_at IS NULL OR expires_at > ?)"
        params = (tenant_id, self._now())
        with self._db.locked() as conn:
            by_type = dict(
                conn.execute(f"SELECT type, COUNT(*) FROM memories WHERE {live} GROUP BY type", params)
            )
            by_status = dict(
                conn.execute(f"SELECT status, COUNT(*) FROM memories WHERE {live} GROUP BY status", params)
            )
            oldest, newest = conn.execute(
                f"SELECT MIN(created_at), MAX(created_at) FROM memories WHERE {live}", params
            ).fetchone()
        return StoreStats(
            total=sum(by_type.values()),
            by_type=by_type,
            by_status=by_status,
            oldest=datetime.fromtimestamp(oldest, UTC) if oldest is not None else None,
            newest=datetime.fromtimestamp(newest, UTC) if newest is not None else None,
        )

    def tenants(self) -> list[str]:
        with self._db.locked() as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM memories ORDER BY 1")]


def _encode_cursor(updated_at: float, memory_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([updated_at, memory_id]).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        updated_at, memory_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(updated_at), str(memory_id)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page") from exc
