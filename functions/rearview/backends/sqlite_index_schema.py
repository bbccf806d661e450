"""The embedded index's file layout: the `docs` table, one FTS5 table per tenant, and their migrations.

`MIGRATIONS` is what `SQLiteMemoryIndex.ensure_schema` applies (`sqlite_common.Migration`), oldest
first; `create_fts` registers a tenant in `fts_tenants` and creates its FTS5 table the first time
it writes.
"""

from __future__ import annotations

import sqlite3

from rearview.backends.sqlite_common import Migration
from rearview.models import MemoryType, Visibility
from rearview.ports import CONTEXT_WEIGHT, CUE_WEIGHT
from rearview.shared.scopes import scope_key

FTS_SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 42, 0)
"""FTS5 can remove a deleted row's terms from its segments in place (else: `optimize` after deletes)."""


TOKENIZER = "porter unicode61 remove_diacritics 2"


def bm25_rank(table: str) -> str:
    """FTS5 BM25, the context column at `CONTEXT_WEIGHT`, the cues' at `CUE_WEIGHT` (lower is better)."""
    return f"bm25({table}, 1.0, {CONTEXT_WEIGHT!r}, {CUE_WEIGHT!r})"


def fts_name(number: int) -> str:
    """The FTS5 table of the tenant numbered `number` in `fts_tenants`."""
    return f"docs_fts_{int(number)}"


def create_fts(conn: sqlite3.Connection, tenant_id: str) -> str:
    """Register `tenant_id` in `fts_tenants` and create its FTS5 table; returns the table's name."""
    cur = conn.execute("INSERT INTO fts_tenants (tenant_id) VALUES (?)", (tenant_id,))
    table = fts_name(int(cur.lastrowid or 0))
    conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(body, ctx, cue, tokenize = '{TOKENIZER}')")
    if FTS_SECURE_DELETE:  # a persistent option of the table
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)")
    return table


def _add_cue_column(conn: sqlite3.Connection) -> None:
    """Give every tenant's FTS5 table a third column for recall cues, and `docs` their vectors.

    FTS5 cannot add a column: each table is rebuilt under its own name, its documents keeping their
    text with no cues (`cue_vectors` NULL: none).
    """
    conn.execute("ALTER TABLE docs ADD COLUMN cue_vectors BLOB")
    for (n,) in conn.execute("SELECT n FROM fts_tenants ORDER BY n").fetchall():
        table = fts_name(n)
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(body, ctx, cue, tokenize = '{TOKENIZER}')")
        if FTS_SECURE_DELETE:
            conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)")
        conn.execute(
            f"INSERT INTO {table} (rowid, body, ctx, cue) SELECT rowid, body, ctx, '' FROM {table}_old"
        )
        conn.execute(f"DROP TABLE {table}_old")


def _split_by_tenant(conn: sqlite3.Connection) -> None:
    """Move the one all-tenant FTS5 table's rows into a table per tenant, then drop it.

    Until this migration BM25's statistics were over every tenant's documents (issue 24).
    """
    conn.execute("CREATE TABLE fts_tenants (n INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL UNIQUE)")
    tenants = [r[0] for r in conn.execute("SELECT DISTINCT tenant_id FROM docs ORDER BY tenant_id")]
    for tenant_id in tenants:
        table = create_fts(conn, tenant_id)
        conn.execute(
            f"INSERT INTO {table} (rowid, body, ctx) SELECT f.rowid, f.body, f.ctx"
            " FROM docs_fts f JOIN docs d ON d.rowid = f.rowid WHERE d.tenant_id = ?",
            (tenant_id,),
        )
    conn.execute("DROP TABLE docs_fts")  # secure_delete zeroes its pages


def _rekey_scopes(conn: sqlite3.Connection) -> None:
    """Re-key every document whose dedup scope key was ambiguous (`rearview.shared.scopes`, issue 24)."""
    rows = conn.execute("SELECT rowid, type, visibility, agent_id, session_id, scope_key FROM docs")
    for rowid, type_, visibility, agent_id, session_id, old in rows.fetchall():
        new = scope_key(MemoryType(type_), Visibility(visibility), agent_id, session_id)
        if new != old:
            conn.execute("UPDATE docs SET scope_key = ? WHERE rowid = ?", (new, rowid))


MIGRATIONS: list[Migration] = [
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
    _add_cue_column,
    # When each memory was written and last changed, for `as_of`; a document indexed before holds
    # 0 and +inf (9e999 reads as infinity): every as-of filter keeps it, its history decides.
    """
    ALTER TABLE docs ADD COLUMN created_at REAL NOT NULL DEFAULT 0;
    ALTER TABLE docs ADD COLUMN updated_at REAL NOT NULL DEFAULT 9e999
    """,
    # The content's parts' vectors (`IndexDocument.part_vectors`, float32 rows concatenated; NULL:
    # none). A document indexed before has none until its content is embedded again (`reindex`).
    "ALTER TABLE docs ADD COLUMN part_vectors BLOB",
]
