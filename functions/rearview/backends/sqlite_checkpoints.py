"""SQLiteCheckpointStore: lifecycle job progress in a small SQLite file next to the embedded store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rearview.backends.sqlite_common import SQLiteDatabase

_MIGRATIONS = [
    """
    CREATE TABLE job_checkpoints (
        tenant_id TEXT NOT NULL, job TEXT NOT NULL, state TEXT NOT NULL, saved_at REAL NOT NULL,
        PRIMARY KEY (tenant_id, job)
    ) WITHOUT ROWID
    """,
]


class SQLiteCheckpointStore:
    """`CheckpointStore` on one SQLite file (`:memory:` works too). The file opens on first use."""

    def __init__(self, path: str | Path) -> None:
        self._db = SQLiteDatabase(path)

    def ensure_schema(self) -> None:
        self._db.migrate("checkpoints", _MIGRATIONS)

    def close(self) -> None:
        """Close the underlying connection."""
        self._db.close()

    def load(self, tenant_id: str, job: str) -> str | None:
        with self._db.locked() as conn:
            row = conn.execute(
                "SELECT state FROM job_checkpoints WHERE tenant_id = ? AND job = ?", (tenant_id, job)
            ).fetchone()
        return str(row[0]) if row else None

    def save(self, tenant_id: str, job: str, state: str) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO job_checkpoints VALUES (?, ?, ?, ?)",
                (tenant_id, job, state, datetime.now(UTC).timestamp()),
            )

    def delete(self, tenant_id: str, job: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM job_checkpoints WHERE tenant_id = ? AND job = ?", (tenant_id, job))
