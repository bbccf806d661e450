"""A new memory's creation time: now, or the time an import carries over from the source system.

An import (`rearview import --from mem0`, a `WriteRequest` line with `created_at`) keeps when the
memory was first recorded, so its age, its retention (`expires_at`) and its decay (anchored at
`last_accessed_at`) count from then, not from the day it moved in. A time in the future is refused:
it would make a memory that nothing can age.
"""

from __future__ import annotations

from datetime import UTC, datetime

from rearview.errors import InvalidInputError
from rearview.models import WriteRequest


def created_at(req: WriteRequest, now: datetime) -> datetime | None:
    """`req.created_at` as aware UTC (a naive time read as UTC), None when the request gives none.

    InvalidInputError naming `created_at` when it is after `now`.
    """
    given = req.created_at
    if given is None:
        return None
    at = given.replace(tzinfo=UTC) if given.tzinfo is None else given.astimezone(UTC)
    if at > now:
        raise InvalidInputError(
            "created_at", f"is in the future ({at.isoformat()}; now is {now.isoformat()})"
        )
    return at
