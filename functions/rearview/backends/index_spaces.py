"""The embedded index keeps one file per vector space; when the embedder's space changes, say so.

`bootstrap.build_index` names the file after the embedder's `model_id` (`index-<space>.sqlite3`):
vectors of different models never share an index. Another model or dimension (`REARVIEW_EMBEDDER`,
`REARVIEW_OPENAI_MODEL`, ...) therefore opens an empty index, and the memories written before are
found by keyword only until `rearview reindex` re-embeds them. `reindex_notice` is the line that says
so, as long as the new space's index is empty while another space's file is there.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

__all__ = ["index_path", "reindex_notice"]


def index_path(data_dir: Path, space: str) -> Path:
    """The index file of vector space `space` (a `model_id`, made safe for a file name)."""
    return data_dir / f"index-{re.sub(r'[^A-Za-z0-9.-]+', '_', space)}.sqlite3"


def reindex_notice(data_dir: Path, space: str) -> str | None:
    """A line asking for `rearview reindex` when `space`'s index is empty beside another space's; else None.

    Reads without writing: a missing file, or one whose `docs` table has no row, is empty; a file that
    cannot be read is taken as filled (the index itself reports what is wrong with it).
    """
    path = index_path(data_dir, space)
    others = sorted(p.name for p in data_dir.glob("index-*.sqlite3") if p.name != path.name)
    if not others or not _empty(path):
        return None
    return (
        f"the embedder's vector space is now {space}, and its index is empty beside "
        f"{', '.join(others)} of another space: memories written before the change are found by keyword "
        "only until you run `rearview reindex`"
    )


def _empty(path: Path) -> bool:
    if not path.exists():
        return True
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is None
    except sqlite3.Error:
        return False
    finally:
        conn.close()
