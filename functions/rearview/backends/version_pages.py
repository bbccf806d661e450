"""Paging of `MemoryIndex.versions` shared by every index: the limit check and the keyset cursor.

The cursor is the last memory id of the previous page, base64-encoded so callers treat it as
opaque; the next page starts strictly after it.
"""

from __future__ import annotations

import base64
import binascii

from rearview.errors import InvalidInputError
from rearview.ports import MAX_VERSIONS_PAGE

__all__ = ["after_id", "check_limit", "cursor_after"]


def check_limit(limit: int) -> int:
    """`limit` if it is 1..MAX_VERSIONS_PAGE, else InvalidInputError naming `limit`."""
    if not 1 <= limit <= MAX_VERSIONS_PAGE:
        raise InvalidInputError("limit", f"must be between 1 and {MAX_VERSIONS_PAGE}")
    return limit


def cursor_after(memory_id: str) -> str:
    """The cursor of a page whose last memory id is `memory_id`."""
    return base64.urlsafe_b64encode(memory_id.encode("utf-8")).decode("ascii")


def after_id(cursor: str | None) -> str | None:
    """The memory id a cursor continues after (None: from the start); InvalidInputError if malformed."""
    if cursor is None:
        return None
    try:
        memory_id = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page") from exc
    if not memory_id or cursor_after(memory_id) != cursor:  # the decoder skips stray characters
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page")
    return memory_id
