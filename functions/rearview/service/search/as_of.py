"""As-of recall: what was believed at a past time (`memory_search(as_of=T)`).

The index keeps retired memories (superseded, soft-forgotten: `indexing.INDEXED_STATUSES`) beside the
active ones, with when each was written (`created_at`) and last changed (`updated_at`). An as-of
search asks it, inside the query, for the memories that may have been active at T
(`MemoryFilter.as_of`: written by T, and active now or changed after T); a normal search matches
status `active` only, so the retired documents cost it nothing but their share of the posting lists.
Each candidate's history then decides (`state_at`): the memory as its last event at or before T
left it, kept only if that left it active. One history read per candidate, bounded by the search's
depth: never a scan of the tenant.

Reproduced as of T: which memories were active, their content, tags, importance, confidence and
event time then (an edit made after T is not shown), and recency counted from T. Not reproduced:
strength and access counts then (ranking uses the strength history recorded at T's last event,
decayed to T), memories erased since (a hard forget erases history by design), memories the
lifecycle archived since (their stubs hold no searchable text), and which words matched: the index
holds the current text, so a memory edited since is found by its current words.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from rearview.errors import InvalidInputError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus
from rearview.service.history import AUDIT_FIELDS
from rearview.service.indexing import INDEXED_STATUSES
from rearview.shared.clock import to_iso

AS_OF_STATUSES = INDEXED_STATUSES
"""What an as-of search asks the index for: every status a memory active at T may have now."""


def check_as_of(as_of: datetime, now: datetime, horizon_days: float) -> None:
    """InvalidInputError naming `as_of` when it is in the future or before the horizon."""
    if as_of > now:
        raise InvalidInputError("as_of", f"is in the future; give a time up to now ({to_iso(now)})")
    earliest = now - timedelta(days=horizon_days)
    if as_of < earliest:
        raise InvalidInputError(
            "as_of",
            f"is before the retention of history: the earliest allowed is {to_iso(earliest)}"
            f" ({horizon_days:g} days back)",
        )


def as_of_filter(flt: MemoryFilter, as_of: datetime) -> MemoryFilter:
    """`flt` asking the index for what may have been active at `as_of` (every status it holds)."""
    return flt.model_copy(update={"as_of": as_of, "statuses": AS_OF_STATUSES})


def state_at(memory: Memory, events: Sequence[HistoryEvent], as_of: datetime) -> Memory | None:
    """`memory` as it was at `as_of`, or None if it was not active then.

    The audited fields (`history.AUDIT_FIELDS`) come from the `after` of its last event at or before
    `as_of`; a memory with no history at all (stored before history was kept) is its current record
    if it was written by then and is active now. One whose `expires_at` then had passed was gone.
    """
    if memory.created_at > as_of:
        return None
    if not events:
        return memory if memory.status is MemoryStatus.ACTIVE and not memory.is_expired(as_of) else None
    last = None
    for event in events:
        if event.at <= as_of and event.after is not None:
            last = event
    if last is None or last.after is None or last.after.get("status") != MemoryStatus.ACTIVE.value:
        return None
    then: dict[str, Any] = {k: v for k, v in last.after.items() if k in AUDIT_FIELDS}
    then.setdefault("verified_at", None)  # recorded before verification was kept: none then
    then.setdefault("verified_by", None)
    then.update(updated_at=last.at, superseded_by=None)
    was = Memory.model_validate({**memory.model_dump(), **then})
    return None if was.is_expired(as_of) else was
