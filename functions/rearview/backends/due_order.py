"""The due order the stores share (`MemoryStore.list_due`): which memories take part, and its cursor.

A due listing is ordered by (due time, memory id); its cursor is that position of the last item
returned, so a listing resumes strictly after it whatever the job changed meanwhile.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from typing import Final

from rearview.errors import InvalidInputError
from rearview.models import MemoryStatus

DUE_STATUSES: Final = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)
"""Only these can be due: what the archiving jobs archive (a stub or a deleted memory never is)."""


def due_text(when: datetime) -> str:
    """Fixed-width UTC text of `when` with microseconds: text order is time order."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode_due_cursor(due: str, memory_id: str) -> str:
    """The cursor of a page whose last item sits at (`due`, `memory_id`); `due`: the store's key text."""
    return base64.urlsafe_b64encode(json.dumps({"due": due, "id": memory_id}).encode()).decode()


def decode_due_cursor(cursor: str | None) -> tuple[str, str] | None:
    """The (due, id) position a due cursor resumes after; `InvalidInputError` for any other text."""
    if cursor is None:
        return None
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        due, memory_id = raw["due"], raw["id"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous due page") from exc
    if not isinstance(due, str) or not isinstance(memory_id, str):
        raise InvalidInputError("cursor", "is not a cursor returned by a previous due page")
    return due, memory_id
