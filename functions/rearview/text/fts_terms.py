"""The terms SQLite FTS5 indexes for `text.tokens`, computed by SQLite itself.

The embedded index (`SQLiteMemoryIndex`) stems with FTS5's `porter unicode61 remove_diacritics 2`
tokenizer; the in-memory BM25 (`rearview.text.bm25`) must index the same terms to rank as it does, so it
asks the same tokenizer rather than a second Porter implementation that could disagree on a word.
Each distinct token is tokenized once (an in-memory FTS5 table read through `fts5vocab`) and cached.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from functools import lru_cache

from rearview.text import tokens

__all__ = ["fts_terms", "text_terms"]

_TOKENIZER = "porter unicode61 remove_diacritics 2"
_lock = threading.Lock()
_conn = sqlite3.connect(":memory:", check_same_thread=False)  # a tokenizer, not storage: cheap to open
_conn.executescript(
    f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{_TOKENIZER}');"
    " CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');"
)


def fts_terms(tokens: Iterable[str]) -> list[str]:
    """The FTS5 terms of `tokens`, in order (a token FTS5 splits, "don't", gives several)."""
    return [term for token in tokens for term in _terms_of(token)]


def text_terms(text: str) -> list[str]:
    """The FTS5 terms of a text: `fts_terms(tokens(text))`, what the embedded index holds of it."""
    return fts_terms(tokens(text))


@lru_cache(maxsize=1 << 16)
def _terms_of(token: str) -> tuple[str, ...]:
    with _lock:
        _conn.execute("DELETE FROM t")
        _conn.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (token,))
        return tuple(row[0] for row in _conn.execute("SELECT term FROM v ORDER BY offset"))
