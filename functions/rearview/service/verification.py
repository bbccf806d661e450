"""Verified memories: an agent records that it checked a memory and it still holds.

`memory_update(memory_id, verified=true)` stamps `verified_at` (now) and `verified_by` (the caller's
agent) on an active memory: its content, `updated_at` and vectors stay, its record version moves on
(optimistic concurrency) and its history gains a `verified` event. Ranking counts a memory's age
from its freshness (`Memory.fresh_at`: the later of its last change and its last verification), and
its strength decays from the later of its last recall and its last verification (`policy.DecayPolicy`):
a verified memory decays no faster than its unverified twin. The context block shows the date.
"""

from __future__ import annotations

from rearview.errors import InvalidInputError


def check_verified_arg(verified: bool | None) -> None:
    """InvalidInputError naming `verified` for false: only true records anything."""
    if verified is False:
        raise InvalidInputError(
            "verified", "only true is meaningful: it records that the memory was checked and still holds"
        )
