"""SQLiteMemoryIndex: the embedded search index (SQLite FTS5 for BM25, numpy for exact k-NN).

Documents live in one SQLite file (derived data: delete it and `rearview reindex` rebuilds it).
The keyword channel is an FTS5 query joined to the filter columns, so filtering happens inside
the query. Each tenant has an FTS5 table of its own (`docs_fts_<n>`, numbered in `fts_tenants`):
BM25's corpus statistics (document count, lengths, document frequencies) and the candidates a
`MATCH` walks are that tenant's alone, so no tenant's words move another's scores and no tenant's
volume slows another's keyword query. The vector channel is an exact cosine scan over a per-tenant
numpy matrix kept in memory (built lazily from the file, updated in place on writes, dropped when
another process wrote the file: `_catch_up`) with the filter applied as a boolean mask before
ranking, so a small scope still gets its `limit` results.

Text is indexed as `text.tokens` (casefolded words, CJK bigrams) with FTS5's porter stemmer, in
three columns: the memory's content (`body`), its keyword context (`ctx`, weighted `CONTEXT_WEIGHT`
by the BM25 ranking) and its recall cues (`cue`, weighted `CUE_WEIGHT`). The cues' vectors are kept
beside the content's (`docs.cue_vectors`, a row per cue), and so are the content's parts' (`docs.
part_vectors`, `IndexDocument.part_vectors`); a document's cosine is the best of its content's, its
parts' and its cues' (`TenantMatrix.best`).

Writes are conditional on the memory's version (stored per document, checked in the write's
transaction, and the matrix is updated only for the writes that applied). Keyword queries run on
read connections of their own (WAL), so a slow query holds no lock that writes or other
tenants' searches wait on. A delete erases the text from the file: `secure_delete` zeroes the
freed pages, FTS5's `secure-delete` option (SQLite >= 3.42) or else an FTS5 `optimize` rewrites
the segments without it, and the write-ahead log is truncated.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rearview.backends.sqlite_common import SQLiteDatabase, filter_sql
from rearview.backends.sqlite_index_schema import (
    FTS_SECURE_DELETE,
    MIGRATIONS,
    bm25_rank,
    create_fts,
    fts_name,
)
from rearview.backends.sqlite_terms import DocFrequencies, fts_text, keyword_ceiling
from rearview.backends.sqlite_vectors import DocRow, TenantMatrix
from rearview.backends.vector_checks import check_vector, optional_rows
from rearview.backends.version_pages import after_id, check_limit, cursor_after
from rearview.errors import IndexUnavailableError, StoreError
from rearview.ports import ChannelHits, IndexDocument, IndexedVersions, IndexQuery, Vector
from rearview.text import query_tokens

__all__ = ["INDEX_CACHE_MIB", "SQLiteMemoryIndex"]

INDEX_CACHE_MIB = 32
"""Page cache of each index connection. A keyword query walks FTS5 posting lists and the `docs`
rows they join: at 10k memories that is more pages than SQLite's default 2 MiB holds, so every
search re-read them from the OS (keyword stage 3.6 -> 2.5 ms at 10k, `benchmarks/speed/search_latency.py`).
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
        self._tenants: dict[str, TenantMatrix] = {}
        self._fts: dict[str, str] = {}
        """Tenant -> its FTS5 table, for tables known to be committed (tables are never dropped)."""
        self._df = DocFrequencies()
        self._lock = threading.RLock()

    def ensure_schema(self) -> None:
        self._db.migrate("index", MIGRATIONS)

    def _fts_table(self, conn: sqlite3.Connection, tenant_id: str) -> str | None:
        """The tenant's FTS5 table, or None if it has none yet."""
        table = self._fts.get(tenant_id)
        if table is None:
            row = conn.execute("SELECT n FROM fts_tenants WHERE tenant_id = ?", (tenant_id,)).fetchone()
            if row is None:
                return None
            table = self._fts.setdefault(tenant_id, fts_name(row[0]))
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
                        table = created[m.tenant_id] = create_fts(conn, m.tenant_id)
                    doc_row = DocRow.of(m)
                    cue_vectors = optional_rows(doc.cue_vectors, self._dimension)
                    parts = optional_rows(doc.part_vectors, self._dimension) if vector is not None else None
                    if not _write(conn, table, doc, doc_row, vector, cue_vectors, parts):
                        continue
                    self._df.changed(table)
                    cached = self._tenants.get(m.tenant_id)
                    if cached is not None:
                        cues = _cues_or_none(vector, cue_vectors, self._dimension)
                        cached.put(m.id, doc_row, vector, cues, parts)
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
            for memory_id in memory_ids:
                row = conn.execute(
                    "SELECT rowid FROM docs WHERE tenant_id = ? AND memory_id = ?", (tenant_id, memory_id)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
                    conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
                    self._df.changed(table)
                cached = self._tenants.get(tenant_id)
                if cached is not None:
                    cached.remove(memory_id)
            if erase and not FTS_SECURE_DELETE:
                # Deleted terms stay in the segments until merged; `optimize` merges them all. Run even
                # when no document was deleted here: a repeated erasure, or the neighbours' replaced
                # contexts (`service.erasure`), may have left terms since the last merge.
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
        self._catch_up()
        keyword, ceiling = self._keyword(query) if query.text is not None else ([], 0.0)
        vector: list[tuple[str, float]] = []
        carriers: dict[str, int] = {}
        if query.vector is not None:
            vector, carriers = self._vector(query, check_vector(query.vector, self._dimension))
        return ChannelHits(keyword, vector, ceiling, vector_cues=carriers)

    def _catch_up(self) -> None:
        """Drop what is cached from the file (matrices, keyword counts) if another process wrote it.

        Another process (`rearview import`, `Memory()`, a second server) writes through its own
        connection; its documents are then in the file but not in this object's matrices. The check
        is one `PRAGMA data_version` per search; a change reloads each tenant's matrix lazily.
        """
        with self._lock:
            if self._db.changed_elsewhere():
                self._tenants.clear()
                self._df.forget_all()

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
            bm25 = bm25_rank(table)
            sql = (
                f"SELECT d.memory_id, -{bm25} FROM {table} JOIN docs d ON d.rowid = {table}.rowid"
                f" WHERE {table} MATCH ? AND d.tenant_id = ? AND {where}"
                f" ORDER BY {bm25}, d.memory_id LIMIT ?"
            )
            rows = conn.execute(sql, (match, query.tenant_id, *params, query.limit)).fetchall()
            ceiling = (
                keyword_ceiling(conn, self._df, table, query.tenant_id, query.text or "") if rows else 0.0
            )
        return [(r[0], float(r[1])) for r in rows], ceiling

    def _vector(self, query: IndexQuery, vector: Vector) -> tuple[list[tuple[str, float]], dict[str, int]]:
        """The vector hits, best first, and which cue carried each (`ChannelHits.vector_cues`)."""
        with self._lock:
            tm = self._tenant(query.tenant_id)
            rows = np.flatnonzero(tm.mask(query.filter))
            if rows.size == 0:
                return [], {}
            sims, carrier = tm.best(rows, vector, query.match_cues)
            k = min(query.limit, rows.size)
            top = np.argpartition(-sims, k - 1)[:k]
            ranked = sorted((-float(sims[i]), tm.ids[rows[i]], int(carrier[i])) for i in top)  # ties: by id
            return [(memory_id, -neg) for neg, memory_id, _ in ranked], {
                memory_id: cue for _, memory_id, cue in ranked if cue >= 0
            }

    def _rows(self, blob: bytes | None) -> Vector | None:
        """A `docs.cue_vectors`/`part_vectors` blob as a matrix (None: none)."""
        return None if blob is None else np.frombuffer(blob, np.float32).reshape(-1, self._dimension)

    def _tenant(self, tenant_id: str) -> TenantMatrix:
        tm = self._tenants.get(tenant_id)
        if tm is None:
            tm = TenantMatrix(self._dimension)
            with self._db.reading() as conn:  # under self._lock: no write lands while the matrix loads
                rows = conn.execute(
                    "SELECT memory_id, agent_id, visibility, session_id, type, status, scope_key, event_time,"
                    " tags, vector, cue_vectors, created_at, updated_at, part_vectors FROM docs"
                    " WHERE tenant_id = ? ORDER BY rowid",
                    (tenant_id,),
                ).fetchall()
            for r in rows:
                tags, times = frozenset(json.loads(r[8])), (float(r[11]), float(r[12]))
                doc = DocRow(r[1], r[2], r[3], r[4], r[5], r[6], float(r[7]), tags, *times)
                cues, parts = self._rows(r[10]), self._rows(r[13])
                tm.put(r[0], doc, np.frombuffer(r[9], dtype=np.float32), cues, parts)
            self._tenants[tenant_id] = tm
        return tm


def _cues_or_none(vector: Vector | None, cue_vectors: Vector | None, dimension: int) -> Vector | None:
    """What `TenantMatrix.put` takes: with a content vector its cues (none: empty), else as given."""
    if vector is not None and cue_vectors is None:
        return np.zeros((0, dimension), np.float32)
    return cue_vectors


def _write(
    conn: sqlite3.Connection,
    table: str,
    doc: IndexDocument,
    doc_row: DocRow,
    vector: Vector | None,
    cue_vectors: Vector | None,
    part_vectors: Vector | None,
) -> bool:
    """Write one document unless the indexed one is newer (or, vector-less, absent or of other content).

    Its text goes into `table`, its tenant's FTS5 table. Returns whether it was written.
    """
    m = doc.memory
    row = conn.execute(
        "SELECT rowid, version, content_hash, agent_id, visibility, session_id, type, status, scope_key,"
        " event_time, tags, created_at, updated_at FROM docs WHERE tenant_id = ? AND memory_id = ?",
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
                "UPDATE docs SET agent_id=?, visibility=?, session_id=?, type=?, status=?, scope_key=?,"
                " event_time=?, tags=?, created_at=?, updated_at=?, version=?, content_hash=?"
                " WHERE rowid = ?",
                (*cols, row[0]),
            )
        if doc.context is not None:
            conn.execute(f"UPDATE {table} SET ctx = ? WHERE rowid = ?", (fts_text(doc.context), row[0]))
        if cue_vectors is not None:
            conn.execute(f"UPDATE {table} SET cue = ? WHERE rowid = ?", (fts_text(doc.cue_text), row[0]))
            conn.execute("UPDATE docs SET cue_vectors = ? WHERE rowid = ?", (_blob(cue_vectors), row[0]))
        return True
    if row is not None:
        conn.execute("DELETE FROM docs WHERE rowid = ?", (row[0],))
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
    cur = conn.execute(
        "INSERT INTO docs (tenant_id, memory_id, agent_id, visibility, session_id, type, status, scope_key,"
        " event_time, tags, created_at, updated_at, version, content_hash, vector, cue_vectors, part_vectors)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (m.tenant_id, m.id, *cols, vector.tobytes(), _blob(cue_vectors), _blob(part_vectors)),
    )
    conn.execute(
        f"INSERT INTO {table} (rowid, body, ctx, cue) VALUES (?, ?, ?, ?)",
        (
            cur.lastrowid,
            fts_text(m.content),
            fts_text(doc.context or ""),
            fts_text(doc.cue_text) if cue_vectors is not None else "",
        ),
    )
    return True


def _blob(vectors: Vector | None) -> bytes | None:
    """Cue or part vectors as `docs.cue_vectors`/`part_vectors` hold them; None for none.

    Float32 rows, concatenated.
    """
    return None if vectors is None or len(vectors) == 0 else np.ascontiguousarray(vectors).tobytes()
