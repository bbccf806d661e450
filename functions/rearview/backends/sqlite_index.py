"""SQLiteMemoryIndex: the embedded search index (SQLite FTS5 for BM25, numpy for exact k-NN).

Documents live in one SQLite file (derived data: delete it and `rearview reindex` rebuilds it).
The keyword channel is an FTS5 query joined to the filter columns, so filtering happens inside
the query. The vector channel is an exact cosine scan over a per-tenant numpy matrix kept in
memory (built lazily from the file, updated in place on writes) with the filter applied as a
boolean mask before ranking, so a small scope still gets its `limit` results.

Text is indexed as `text.tokens` (casefolded words, CJK bigrams) with FTS5's porter stemmer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rearview.backends.memory import check_vector
from rearview.backends.sqlite_common import SQLiteDatabase, filter_sql
from rearview.models import Memory, MemoryFilter, Visibility
from rearview.ports import ChannelHits, IndexDocument, IndexQuery, Vector
from rearview.text import query_tokens, tokens

_MIGRATIONS = [
    """
    CREATE TABLE docs (
        rowid INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, memory_id TEXT NOT NULL,
        agent_id TEXT NOT NULL, visibility TEXT NOT NULL, session_id TEXT, type TEXT NOT NULL,
        status TEXT NOT NULL, scope_key TEXT NOT NULL, event_time REAL NOT NULL, tags TEXT NOT NULL,
        vector BLOB NOT NULL, UNIQUE (tenant_id, memory_id)
    );
    CREATE VIRTUAL TABLE docs_fts USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')
    """,
]


@dataclass(frozen=True, slots=True)
class _DocRow:
    """The filterable fields of one indexed memory, as stored in the `docs` table."""

    agent_id: str
    visibility: str
    session_id: str | None
    type: str
    status: str
    scope_key: str
    event_time: float
    tags: frozenset[str]

    @classmethod
    def of(cls, m: Memory) -> _DocRow:
        return cls(m.agent_id, m.visibility.value, m.session_id, m.type.value, m.status.value, m.scope_key,
                   m.event_time.timestamp(), frozenset(m.tags))  # fmt: skip

    def sql_values(self) -> tuple[object, ...]:
        return (self.agent_id, self.visibility, self.session_id, self.type, self.status, self.scope_key,
                self.event_time, json.dumps(sorted(self.tags)))  # fmt: skip


@dataclass(slots=True)
class _TenantMatrix:
    """One tenant's vectors plus the columns the filter needs, row-aligned; dead rows are masked."""

    dimension: int
    ids: list[str] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    matrix: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    alive: list[bool] = field(default_factory=list)
    rows: list[_DocRow | None] = field(default_factory=list)
    columns: dict[str, npt.NDArray[np.generic]] | None = None

    def put(self, memory_id: str, doc: _DocRow, vector: Vector | None) -> None:
        row = self.pos.get(memory_id)
        if row is None:
            if vector is None:
                return
            row = len(self.ids)
            self.ids.append(memory_id)
            self.alive.append(True)
            self.rows.append(doc)
            self.pos[memory_id] = row
            if row >= self.matrix.shape[0]:
                grown = np.zeros((max(64, row * 2), self.dimension), np.float32)
                grown[: self.matrix.shape[0]] = self.matrix.reshape(-1, self.dimension)
                self.matrix = grown
        self.rows[row] = doc
        if vector is not None:
            self.matrix[row] = vector
        self.columns = None

    def remove(self, memory_id: str) -> None:
        row = self.pos.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False
            self.rows[row] = None
            self.columns = None

    def mask(self, flt: MemoryFilter) -> npt.NDArray[np.bool_]:
        """Rows that are alive and satisfy `flt` (same semantics as `MemoryFilter.matches`)."""
        n = len(self.ids)
        cols = self._columns()
        ok = np.array(self.alive, dtype=bool)
        if flt.agent_id is not None:
            ok &= (cols["visibility"] == Visibility.SHARED.value) | (cols["agent_id"] == flt.agent_id)
        if flt.session_id is not None:
            ok &= cols["session_id"] == flt.session_id
        if flt.types is not None:
            ok &= np.isin(cols["type"], [t.value for t in flt.types])
        ok &= np.isin(cols["status"], [s.value for s in flt.statuses])
        if flt.scope_key is not None:
            ok &= cols["scope_key"] == flt.scope_key
        times = np.asarray(cols["event_time"], dtype=np.float64)
        if flt.time_from is not None:
            ok &= times >= flt.time_from.timestamp()
        if flt.time_to is not None:
            ok &= times <= flt.time_to.timestamp()
        if flt.tags:
            wanted = set(flt.tags)
            ok &= np.fromiter((r is not None and wanted <= r.tags for r in self.rows), dtype=bool, count=n)
        return ok

    def _columns(self) -> dict[str, npt.NDArray[np.generic]]:
        if self.columns is None:
            rows = self.rows
            names = ("visibility", "agent_id", "session_id", "type", "status", "scope_key")
            self.columns = {
                name: np.array([getattr(r, name) if r is not None else None for r in rows], dtype=object)
                for name in names
            }
            self.columns["event_time"] = np.array(
                [r.event_time if r is not None else np.nan for r in rows], dtype=np.float64
            )
        return self.columns


class SQLiteMemoryIndex:
    """`MemoryIndex` on one SQLite file: FTS5 BM25 + exact numpy cosine, both filtered in-query."""

    def __init__(self, path: str | Path, dimension: int) -> None:
        self._db = SQLiteDatabase(path)
        self._dimension = dimension
        self._tenants: dict[str, _TenantMatrix] = {}
        self._lock = threading.RLock()

    def ensure_schema(self) -> None:
        self._db.migrate("index", _MIGRATIONS)

    def close(self) -> None:
        """Close the file and drop the in-memory matrices."""
        with self._lock:
            self._tenants.clear()
            self._db.close()

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        vectors = [None if d.vector is None else check_vector(d.vector, self._dimension) for d in docs]
        with self._lock, self._db.transaction() as conn:
            for doc, vector in zip(docs, vectors, strict=True):
                m = doc.memory
                doc_row = _DocRow.of(m)
                cols = doc_row.sql_values()
                row = conn.execute(
                    "SELECT rowid FROM docs WHERE tenant_id = ? AND memory_id = ?", (m.tenant_id, m.id)
                ).fetchone()
                if vector is None:
                    if row is None:
                        continue
                    conn.execute(
                        "UPDATE docs SET agent_id=?, visibility=?, session_id=?, type=?, status=?,"
                        " scope_key=?, event_time=?, tags=? WHERE rowid = ?",
                        (*cols, row[0]),
                    )
                else:
                    if row is not None:
                        conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
                        conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (row[0],))
                    cur = conn.execute(
                        "INSERT INTO docs (tenant_id, memory_id, agent_id, visibility, session_id, type,"
                        " status, scope_key, event_time, tags, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        (m.tenant_id, m.id, *cols, vector.tobytes()),
                    )
                    conn.execute(
                        "INSERT INTO docs_fts (rowid, body) VALUES (?, ?)",
                        (cur.lastrowid, " ".join(tokens(m.content))),
                    )
                cached = self._tenants.get(m.tenant_id)
                if cached is not None:
                    cached.put(m.id, doc_row, vector)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock, self._db.transaction() as conn:
            for memory_id in memory_ids:
                row = conn.execute(
                    "SELECT rowid FROM docs WHERE tenant_id = ? AND memory_id = ?", (tenant_id, memory_id)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
                    conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (row[0],))
                cached = self._tenants.get(tenant_id)
                if cached is not None:
                    cached.remove(memory_id)

    def count(self, tenant_id: str) -> int:
        with self._db.lock:
            return int(
                self._db.conn.execute(
                    "SELECT COUNT(*) FROM docs WHERE tenant_id = ?", (tenant_id,)
                ).fetchone()[0]
            )

    def search(self, query: IndexQuery) -> ChannelHits:
        hits = ChannelHits()
        if query.text is not None:
            hits.keyword.extend(self._keyword(query))
        if query.vector is not None:
            hits.vector.extend(self._vector(query, check_vector(query.vector, self._dimension)))
        return hits

    def _keyword(self, query: IndexQuery) -> list[tuple[str, float]]:
        terms = query_tokens(query.text or "")
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = filter_sql(query.filter, "d")
        sql = (
            "SELECT d.memory_id, -bm25(docs_fts) FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid"
            f" WHERE docs_fts MATCH ? AND d.tenant_id = ? AND {where}"
            " ORDER BY bm25(docs_fts), d.memory_id LIMIT ?"
        )
        with self._db.lock:
            rows = self._db.conn.execute(sql, (match, query.tenant_id, *params, query.limit)).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def _vector(self, query: IndexQuery, vector: Vector) -> list[tuple[str, float]]:
        with self._lock:
            tm = self._tenant(query.tenant_id)
            n = len(tm.ids)
            if n == 0:
                return []
            mask = tm.mask(query.filter)
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                return []
            sims = tm.matrix[rows] @ vector if rows.size < n else tm.matrix[:n] @ vector
            k = min(query.limit, rows.size)
            top = np.argpartition(-sims, k - 1)[:k]
            ranked = sorted((-float(sims[i]), tm.ids[rows[i]]) for i in top)  # ties: by memory id
            return [(memory_id, -neg) for neg, memory_id in ranked]

    def _tenant(self, tenant_id: str) -> _TenantMatrix:
        tm = self._tenants.get(tenant_id)
        if tm is None:
            tm = _TenantMatrix(self._dimension)
            with self._db.lock:
                rows = self._db.conn.execute(
                    "SELECT memory_id, agent_id, visibility, session_id, type, status, scope_key, event_time,"
                    " tags, vector FROM docs WHERE tenant_id = ? ORDER BY rowid",
                    (tenant_id,),
                ).fetchall()
            for r in rows:
                doc = _DocRow(r[1], r[2], r[3], r[4], r[5], r[6], float(r[7]), frozenset(json.loads(r[8])))
                tm.put(r[0], doc, np.frombuffer(r[9], dtype=np.float32))
            self._tenants[tenant_id] = tm
        return tm
