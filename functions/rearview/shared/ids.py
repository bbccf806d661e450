"""Identifiers: memories and history events get ULIDs (sortable by creation time)."""

from __future__ import annotations

from datetime import datetime

from ulid import ULID


def new_id(at: datetime | None = None) -> str:
    """A new ULID string; `at` pins its time part (for deterministic ordering under a test clock)."""
    if at is None:
        return str(ULID())
    return str(ULID.from_timestamp(at.timestamp()))
