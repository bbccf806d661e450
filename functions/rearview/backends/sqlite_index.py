"""SQLiteMemoryIndex: the embedded search index (SQLite FTS5 for BM25, numpy for exact k-NN).

Documents live in one SQLite file (derived data: delete it and `rearview reindex` rebuilds it).
The keyword channel is an FTS5 query joined to the filter columns, so filtering happens inside
the query. Each tenant has an FTS5 table of its own (`docs_fts_<n>`, numbered in `fts_tenants`):
BM25's corpus statistics (document count, lengths, document frequencies) and the candidates a
`MATCH` walks are that tenant's alone, so no tenant's words move another's scores and no tenant's
volume slows another's keyword query. The vector channel is an exact cosine scan over a per-tenant
numpy matrix kept in memory (built lazily from the file, updated in place on writes) with the
filter applied as a boolean mask before ranking, so a small scope still gets its `limit` results.

Text is indexed as `text.tokens` (casefolded words, CJK bigrams) with FTS5's porter stemmer, in
two columns: the memory's content (`body`) and its keyword context (`ctx`, weighted
`CONTEXT_WEIGHT` by the BM25 ranking).

Writes are conditional on the memory's version (stored per document, checked in the write's
transaction, and the matrix is updated only for the writes that applied). Keyword queries run on
read connections of their own (WAL), so a slow query holds no lock that writes or other
tenants' searches wait on. A delete erases the text from the file: `secure_delete` zeroes the
freed pages, FTS5's `secure-delete` option (SQLite >= 3.42) or else an FTS5 `optimize` rewrites
the segments without it, and the write-ahead log is truncated.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from rearview.backends.memory import check_vector
from rearview.backends.sqlite_common import Migration, SQLiteDatabase, filter_sql
from rearview.backends.version_pages import after_id, check_limit, cursor_after
from rearview.bm25 import CorpusStats, query_phrases
from rearview.errors import IndexUnavailableError, StoreError
from rearview.models import Memory, MemoryFilter, MemoryType, Visibility
from rearview.ports import CONTEXT_WEIGHT, ChannelHits, IndexDocument, IndexedVersions, IndexQuery, Vector
from rearview.scopes import scope_key
from rearview.text import query_tokens, tokens

_FTS_SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 42, 0)
"""FTS5 can remove a deleted row's terms from its segments in place (else: `optimize` after deletes)."""


_TOKENIZER = "porter unicode61 remove_diacritics 2"


def _bm25(table: str) -> str:
    """FTS5 BM25 with the context column counted at `CONTEXT_WEIGHT` (lower is better, as FTS5 ranks)."""
    return f"bm25({table}, 1.0, {CONTEXT_WEIGHT!r})"


def _fts_name(number: int) -> str:
    return f"docs_fts_{int(number)}"


def _create_fts(conn: sqlite3.Connection, tenant_id: str) -> str:
    """Register `tenant_id` in `fts_tenants` and create its FTS5 table; returns the table's name."""
    cur = conn.execute("INSERT INTO fts_tenants (tenant_id) VALUES (?)", (tenant_id,))
    table = _fts_name(int(cur.lastrowid or 0))
    conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(body, ctx, tokenize = '{_TOKENIZER}')")
    if _FTS_SECURE_DELETE:  # a persistent option of the table
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)")
    return table


def _split_by_tenant(conn: sqlite3.Connection) -> None:
    """Move the one all-tenant FTS5 table's rows into a table per tenant, then drop it.

    Until this migration BM25's statistics were over every tenant's documents (issue 24).
    """
    conn.execute("CREATE TABLE fts_tenants (n INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL UNIQUE)")
    tenants = [r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM docs ORDER BY tenant_id")]
    for tenant_id in tenants:
        table = _create_fts(conn, tenant_id)
        conn.execute(
            f"INSERT INTO {table} (rowid, body, ctx) SELECT f.rowid, f.body, f.ctx"
            " FROM docs_fts f JOIN docs d ON d.rowid = f.rowid WHERE d.tenant_id = ?",
            (tenant_id,),
        )
    conn.execute("DROP TABLE docs_fts")  # secure_delete zeroes its pages


def _rekey_scopes(conn: sqlite3.Connection) -> None:
    """Re-key every document whose dedup scope key was ambiguous (`rearview.scopes`, issue 24)."""
    rows = conn.execute("SELECT rowid, type, visibility, agent_id, session_id, scope_key FROM docs")
    for rowid, type_, visibility, agent_id, session_id, old in rows.fetchall():
        new = scope_key(MemoryType(type_), Visibility(visibility), agent_id, session_id)
        if new != old:
            conn.execute("UPDATE docs SET scope_key = ? WHERE rowid = ?", (new, rowid))


_MIGRATIONS: list[Migration] = [
    """
    CREATE TABLE docs (
        rowid INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, memory_id TEXT NOT NULL,
        agent_id TEXT NOT NULL, visibility TEXT NOT NULL, session_id TEXT, type TEXT NOT NULL,
        status TEXT NOT NULL, scope_key TEXT NOT NULL, event_time REAL NOT NULL, tags TEXT NOT NULL,
        vector BLOB NOT NULL, UNIQUE (tenant_id, memory_id)
    );
    CREATE VIRTUAL TABLE docs_fts USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')
    """,
    # Documents indexed before this migration have version 0 and an unknown content hash (NULL).
    """
    ALTER TABLE docs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE docs ADD COLUMN content_hash TEXT
    """,
    # A second column for the keyword context (`IndexDocument.context`). FTS5 cannot add a
    # column: the table is rebuilt, existing documents keep their text with an empty context.
    """
    CREATE VIRTUAL TABLE docs_fts_ctx USING fts5(
        body, ctx, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO docs_fts_ctx (rowid, body, ctx) SELECT rowid, body, '' FROM docs_fts;
    DROP TABLE docs_fts;
    ALTER TABLE docs_fts_ctx RENAME TO docs_fts
    """,
    # One FTS5 table per tenant (see `_split_by_tenant`).
    _split_by_tenant,
    _rekey_scopes,
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
        return cls(
            m.agent_id,
            m.visibility.value,
            m.session_id,
            m.type.value,
            m.status.value,
            m.scope_key,
            m.event_time.timestamp(),
            frozenset(m.tags),
        )

    def sql_values(self) -> tuple[object, ...]:
        return (
            self.agent_id,
            self.visibility,
            self.session_id,
            self.type,
            self.status,
            self.scope_key,
            self.event_time,
            json.dumps(sorted(self.tags)),
        )


_CODED_COLUMNS = ("agent_id", "visibility", "session_id", "type", "status", "scope_key")


class _TenantMatrix:
    """One tenant's vectors and filter columns, row-aligned, updated in place (O(1) per write).

    String columns are dictionary-coded to int32 so a filter is a few vectorized comparisons;
    tags keep an inverted list (tag -> rows). Removed rows stay allocated and are masked out.
    """

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.ids: list[str] = []
        self.pos: dict[str, int] = {}
        self.size = 0
        self.matrix = np.zeros((0, dimension), np.float32)
        self.alive = np.zeros(0, bool)
        self.event_time = np.zeros(0, np.float64)
        self.codes = {name: np.zeros(0, np.int32) for name in _CODED_COLUMNS}
        self.vocab: dict[str, dict[str | None, int]] = {name: {} for name in _CODED_COLUMNS}
        self.row_tags: list[frozenset[str]] = []
        self.tag_rows: dict[str, set[int]] = {}

    def put(self, memory_id: str, doc: _DocRow, vector: Vector | None) -> None:
        row = self.pos.get(memory_id)
        if row is None:
            if vector is None:
                return
            row = self._append(memory_id)
        for name in _CODED_COLUMNS:
            self.codes[name][row] = self.vocab[name].setdefault(getattr(doc, name), len(self.vocab[name]))
        self.event_time[row] = doc.event_time
        self._set_tags(row, doc.tags)
        self.alive[row] = True
        if vector is not None:
            self.matrix[row] = vector

    def remove(self, memory_id: str) -> None:
        row = self.pos.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False
            self._set_tags(row, frozenset())

    def _append(self, memory_id: str) -> int:
        row = self.size
        if row >= self.matrix.shape[0]:
            capacity = max(64, row * 2)
            self.matrix = _grown(self.matrix, capacity)
            self.alive = _grown(self.alive, capacity)
            self.event_time = _grown(self.event_time, capacity)
            self.codes = {name: _grown(col, capacity) for name, col in self.codes.items()}
        self.ids.append(memory_id)
        self.row_tags.append(frozenset())
        self.pos[memory_id] = row
        self.size += 1
        return row

    def _set_tags(self, row: int, tags: frozenset[str]) -> None:
        for tag in self.row_tags[row] - tags:
            self.tag_rows[tag].discard(row)
        for tag in tags - self.row_tags[row]:
            self.tag_rows.setdefault(tag, set()).add(row)
        self.row_tags[row] = tags

    def _is(self, name: str, values: Iterable[str | None]) -> npt.NDArray[np.bool_]:
        """Rows whose `name` column is one of `values`: one vectorized `==` per known value.

        (`np.isin` sorts both sides on every call: ~0.4 ms per column at 10k rows, for what is
        almost always one or two values.)
        """
        column = self.codes[name][: self.size]
        out = np.zeros(self.size, bool)
        for code in {self.vocab[name][v] for v in values if v in self.vocab[name]}:
            out |= column == code
        return out

    def mask(self, flt: MemoryFilter) -> npt.NDArray[np.bool_]:
        """Rows that are alive and satisfy `flt` (same semantics as `MemoryFilter.matches`)."""
        ok = self.alive[: self.size].copy()
        if flt.agent_id is not None:
            ok &= self._is("visibility", [Visibility.SHARED.value]) | self._is("agent_id", [flt.agent_id])
        if flt.session_id is not None:
            ok &= self._is("session_id", [flt.session_id])
        if flt.types is not None:
            ok &= self._is("type", [t.value for t in flt.types])
        ok &= self._is("status", [s.value for s in flt.statuses])
        if flt.scope_key is not None:
            ok &= self._is("scope_key", [flt.scope_key])
        times = self.event_time[: self.size]
        if flt.time_from is not None:
            ok &= times >= flt.time_from.timestamp()
        if flt.time_to is not None:
            ok &= times <= flt.time_to.timestamp()
        for tag in flt.tags or ():
            has = np.zeros(self.size, bool)
            has[list(self.tag_rows.get(tag, ()))] = True
            ok &= has
        return ok


_A = TypeVar("_A", bound=np.generic)


def _grown(array: npt.NDArray[_A], capacity: int) -> npt.NDArray[_A]:
    out = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


INDEX_CACHE_MIB = 32
"""Page cache of each index connection. A keyword query walks FTS5 posting lists and the `docs`
rows they join: at 10k memories that is more pages than SQLite's default 2 MiB holds, so every
search re-read them from the OS (keyword stage 3.6 -> 2.5 ms at 10k, `benchmarks/search_latency.py`).
Pages are only kept while the file does not change, so the store (rewritten by every recall's
reinforcement) gains nothing from the same; a mapped file (`mmap_size`) measured no faster here
and slower for the store. The cache fills only with pages read: a connection holds at most the
file's size (15 MB at 10k memories: peak RSS 105 -> 144 MB there), and there are about as many
connections as searches in flight (`api.tools.search_lane`) plus the writer."""


class SQLiteMemoryIndex:
    """`MemoryIndex` on one SQLite file: FTS5 BM25 + exact numpy cosine, both filtered in-query."""

    def __init__(self, path: str | Path, dimension: int) -> None:
        self._db = SQLiteDatabase(path, IndexUnavailableError, cache_mib=INDEX_CACHE_MIB)
        self._dimension = dimension
        self._tenants: dict[str, _TenantMatrix] = {}
        self._fts: dict[str, str] = {}
        """Tenant -> its FTS5 table, for tables known to be committed (tables are never dropped)."""
        self._df = _DocFrequencies()
        self._lock = threading.RLock()

    def ensure_schema(self) -> None:
        self._db.migrate("index", _MIGRATIONS)

    def _fts_table(self, conn: sqlite3.Connection, tenant_id: str) -> str | None:
        """The tenant's FTS5 table, or None if it has none yet."""
        table = self._fts.get(tenant_id)
        if table is None:
            row = conn.execute("SELECT n FROM fts_tenants WHERE tenant_id = ?", (tenant_id,)).fetchone()
            if row is None:
                return None
            table = self._fts.setdefault(tenant_id, _fts_name(row[0]))
        return table

    def close(self) -> None:
        """Close the file and drop the in-memory matrices."""
        with self._lock:
            self._tenants.clear()
            self._fts.clear()
            self._db.close()

    def upsert(self, docs: Sequence[IndexDocument]) -> None:
        vectors = [None if d.vector is None else check_vector(d.vector, self._dimension) for d in docs]
        with self._lock:
            created: dict[str, str] = {}  # cached only once the transaction that created them commits
            with self._db.transaction() as conn:
                for doc, vector in zip(docs, vectors, strict=True):
                    m = doc.memory
                    table = created.get(m.tenant_id) or self._fts_table(conn, m.tenant_id)
                    if table is None:
                        if vector is None:
                            continue  # a vector-less update of a tenant with nothing indexed
                        table = created[m.tenant_id] = _create_fts(conn, m.tenant_id)
                    doc_row = _DocRow.of(m)
                    if not _write(conn, table, doc, doc_row, vector):
                        continue
                    self._df.changed(table)
                    cached = self._tenants.get(m.tenant_id)
                    if cached is not None:
                        cached.put(m.id, doc_row, vector)
            self._fts.update(created)

    def delete(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the documents (their terms stay in the FTS5 segments until the next merge)."""
        self._delete(tenant_id, memory_ids, erase=False)

    def erase(self, tenant_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the documents and erase their text from the file and its write-ahead log."""
        self._delete(tenant_id, memory_ids, erase=True)

    def _delete(self, tenant_id: str, memory_ids: Sequence[str], *, erase: bool) -> None:
        with self._lock, self._db.transaction() as conn:
            table = self._fts_table(conn, tenant_id)
            if table is None:
                return  # nothing of this tenant was ever indexed
            deleted = False
            for memory_id in memory_ids:
                row = conn.execute(
                    "SELECT rowid FROM docs WHERE tenant_id = ? AND memory_id = ?", (tenant_id, memory_id)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
                    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
                    self._df.changed(table)
                    deleted = True
                cached = self._tenants.get(tenant_id)
                if cached is not None:
                    cached.remove(memory_id)
            if deleted and erase and not _FTS_SECURE_DELETE:
                # Deleted terms stay in the segments until merged; `optimize` merges them all.
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        if not erase:
            return
        try:
            self._db.truncate_wal()
        except StoreError as exc:
            raise IndexUnavailableError(str(exc)) from exc

    def count(self, tenant_id: str) -> int:
        with self._db.reading() as conn:
            return int(
                conn.execute("SELECT COUNT(*) FROM docs WHERE tenant_id = ?", (tenant_id,)).fetchone()[0]
            )

    def versions(self, tenant_id: str, cursor: str | None = None, limit: int = 1000) -> IndexedVersions:
        check_limit(limit)
        after = after_id(cursor)
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT memory_id, version FROM docs WHERE tenant_id = ? AND memory_id > ?"
                " ORDER BY memory_id LIMIT ?",
                (tenant_id, "" if after is None else after, limit + 1),
            ).fetchall()
        items = [(str(r[0]), int(r[1])) for r in rows[:limit]]
        return IndexedVersions(items, cursor_after(items[-1][0]) if len(rows) > limit else None)

    def search(self, query: IndexQuery) -> ChannelHits:
        keyword, ceiling = self._keyword(query) if query.text is not None else ([], 0.0)
        vector = (
            self._vector(query, check_vector(query.vector, self._dimension))
            if query.vector is not None
            else []
        )
        return ChannelHits(keyword, vector, ceiling)

    def _keyword(self, query: IndexQuery) -> tuple[list[tuple[str, float]], float]:
        """The keyword hits, best first, and the query's BM25 scale (`ChannelHits.keyword_ceiling`)."""
        terms = query_tokens(query.text or "")
        if not terms:
            return [], 0.0
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = filter_sql(query.filter, "d")
        with self._db.reading() as conn:  # not the write lock: a long query must not stall writers
            table = self._fts_table(conn, query.tenant_id)
            if table is None:
                return [], 0.0
            bm25 = _bm25(table)
            sql = (
                f"SELECT d.memory_id, -{bm25} FROM {table} JOIN docs d ON d.rowid = {table}.rowid"
                f" WHERE {table} MATCH ? AND d.tenant_id = ? AND {where}"
                f" ORDER BY {bm25}, d.memory_id LIMIT ?"
            )
            rows = conn.execute(sql, (match, query.tenant_id, *params, query.limit)).fetchall()
            ceiling = (
                _keyword_ceiling(conn, self._df, table, query.tenant_id, query.text or "") if rows else 0.0
            )
        return [(r[0], float(r[1])) for r in rows], ceiling

    def _vector(self, query: IndexQuery, vector: Vector) -> list[tuple[str, float]]:
        with self._lock:
            tm = self._tenant(query.tenant_id)
            rows = np.flatnonzero(tm.mask(query.filter))
            if rows.size == 0:
                return []
            # Score every row, then select: cheaper than gathering the matching rows into a copy.
            sims = (tm.matrix[: tm.size] @ vector)[rows]
            k = min(query.limit, rows.size)
            top = np.argpartition(-sims, k - 1)[:k]
            ranked = sorted((-float(sims[i]), tm.ids[rows[i]]) for i in top)  # ties: by memory id
            return [(memory_id, -neg) for neg, memory_id in ranked]

    def _tenant(self, tenant_id: str) -> _TenantMatrix:
        tm = self._tenants.get(tenant_id)
        if tm is None:
            tm = _TenantMatrix(self._dimension)
            with self._db.reading() as conn:  # under self._lock: no write lands while the matrix loads
                rows = conn.execute(
                    "SELECT memory_id, agent_id, visibility, session_id, type, status, scope_key, event_time,"
                    " tags, vector FROM docs WHERE tenant_id = ? ORDER BY rowid",
                    (tenant_id,),
                ).fetchall()
            for r in rows:
                doc = _DocRow(r[1], r[2], r[3], r[4], r[5], r[6], float(r[7]), frozenset(json.loads(r[8])))
                tm.put(r[0], doc, np.frombuffer(r[9], dtype=np.float32))
            self._tenants[tenant_id] = tm
        return tm


def _write(
    conn: sqlite3.Connection, table: str, doc: IndexDocument, doc_row: _DocRow, vector: Vector | None
) -> bool:
    """Write one document unless the indexed one is newer (or, vector-less, absent or of other content).

    Its text goes into `table`, its tenant's FTS5 table. Returns whether it was written.
    """
    m = doc.memory
    row = conn.execute(
        "SELECT rowid, version, content_hash, agent_id, visibility, session_id, type, status, scope_key,"
        " event_time, tags FROM docs WHERE tenant_id = ? AND memory_id = ?",
        (m.tenant_id, m.id),
    ).fetchone()
    if row is not None and row[1] > m.version:
        return False  # a newer version is indexed: this write is stale
    cols = (*doc_row.sql_values(), m.version, m.content_hash)
    if vector is None:
        # NULL: indexed before content hashes were kept, trusted as before.
        if row is None or row[2] not in (None, m.content_hash):
            return False
        if tuple(row[3:]) + tuple(row[1:3]) != cols:  # e.g. a neighbour's new context: its fields stay
            conn.execute(
                "UPDATE docs SET agent_id=?, visibility=?, session_id=?, type=?, status=?,"
                " scope_key=?, event_time=?, tags=?, version=?, content_hash=? WHERE rowid = ?",
                (*cols, row[0]),
            )
        if doc.context is not None:
            conn.execute(f"UPDATE {table} SET ctx = ? WHERE rowid = ?", (_fts_text(doc.context), row[0]))
        return True
    if row is not None:
        conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
    cur = conn.execute(
        "INSERT INTO docs (tenant_id, memory_id, agent_id, visibility, session_id, type, status, scope_key,"
        " event_time, tags, version, content_hash, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (m.tenant_id, m.id, *cols, vector.tobytes()),
    )
    conn.execute(
        f"INSERT INTO {table} (rowid, body, ctx) VALUES (?, ?, ?)",
        (cur.lastrowid, _fts_text(m.content), _fts_text(doc.context or "")),
    )
    return True


def _keyword_ceiling(
    conn: sqlite3.Connection, df: _DocFrequencies, table: str, tenant_id: str, text: str
) -> float:
    """`CorpusStats.ceiling` of `text` under the statistics FTS5's `bm25()` ranks with.

    FTS5 counts rows and each phrase's rows over the whole table (the tenant's own, `table`);
    `fts5vocab` reads a term's row count by walking its doclist, O(its rows), so the counts are
    kept (`_DocFrequencies`) until this index next writes the table. A phrase of several terms
    ("don't": `don t`) is given its rarest term's count, an upper bound of the phrase's (so a
    lower bound of its IDF).
    """
    phrases = query_phrases(text)
    if not phrases:
        return 0.0
    docs = df.counts(conn, table, sorted({t for p in phrases for t in p}))
    rows = _fts_rows(conn, table)
    if rows is None:
        rows = int(conn.execute("SELECT COUNT(*) FROM docs WHERE tenant_id = ?", (tenant_id,)).fetchone()[0])
    hits = tuple(min(docs.get(t, 0) for t in p) for p in phrases)
    return CorpusStats(rows=rows, terms=0, hits=hits).ceiling()


class _DocFrequencies:
    """Per FTS5 table, how many rows hold each term, as last read; forgotten when the table changes.

    Like the vector matrices, it trusts that this index object is the file's one writer (`rearview
    serve`). A read that overlaps a write keeps nothing: each table has a generation, bumped by a
    write, and counts read under an older one are not stored.
    """

    MAX_TERMS = 50_000
    """Counts kept per table before they are all dropped (a bound, not an LRU: queries repeat terms)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation: dict[str, int] = {}
        self._counts: dict[str, dict[str, int]] = {}

    def changed(self, table: str) -> None:
        with self._lock:
            self._generation[table] = self._generation.get(table, 0) + 1
            self._counts.pop(table, None)

    def counts(self, conn: sqlite3.Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
        with self._lock:
            generation = self._generation.get(table, 0)
            kept = self._counts.get(table, {})
            known = {t: kept[t] for t in terms if t in kept}
        missing = [t for t in terms if t not in known]
        if missing:
            vocab = f"temp.{table}_vocab"
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, 'row')")
            marks = ",".join("?" * len(missing))
            read = dict.fromkeys(missing, 0)
            read.update(
                conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", missing).fetchall()
            )
            with self._lock:
                if self._generation.get(table, 0) == generation:
                    kept = self._counts.setdefault(table, {})
                    if len(kept) + len(read) > self.MAX_TERMS:
                        kept.clear()
                    kept.update(read)
            known.update(read)
        return {t: int(known[t]) for t in terms}


def _fts_rows(conn: sqlite3.Connection, table: str) -> int | None:
    """The row count FTS5's `bm25()` uses: the first varint of the table's averages record, or None.

    FTS5 keeps it in `<table>_data` at id 1 (`FTS5_AVERAGES_ROWID`, a stable part of its file
    format), so it costs one b-tree lookup where `COUNT(*)` over the tenant's rows costs a scan
    (0.004 ms against 0.54 ms at 10k rows).
    """
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return None
    value = 0
    for i, byte in enumerate(bytes(row[0])[:9]):  # SQLite's varint: 7 bits a byte, the 9th all 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def _fts_text(text: str) -> str:
    """What FTS5 indexes of a text: its `text.tokens`, space-separated.

    Piece by piece, split at line breaks and at "] " (after a context's date): no token spans
    those characters (nor does Unicode normalization), so this is `" ".join(tokens(text))`, and a
    keyword context, which is its date and its neighbours' lines, is mostly pieces already
    tokenized for the documents written just before it (`_line_tokens` caches them).
    """
    return " ".join(filter(None, map(_line_tokens, _PIECES.split(text))))


_PIECES = re.compile(r"\n|\] ")


@functools.lru_cache(maxsize=4096)
def _line_tokens(line: str) -> str:
    return " ".join(tokens(line))
