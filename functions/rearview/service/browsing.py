"""Listing memories for people (the memory browser): one page at a time, and what is due for archival.

Both read through `visibility.scoped`, so an agent sees shared memories and its own private ones
only, and both are bounded: `browse` returns at most `MAX_BROWSE_PAGE` memories per call (the
store's cursor continues), `due_for_archival` reads at most `scan_limit` memories and returns at
most `limit`. "Due" is decided by the lifecycle's own rules (`service.policy`): faded below
the archive threshold (never importance 5), or expiring before the next job run without a recall
that would renew it. Nothing is written: this is a forecast of what the next jobs archive.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from rearview.errors import InvalidInputError
from rearview.models import Memory, MemoryFilter, MemoryView
from rearview.ports import MemoryStore
from rearview.service.lifecycle.archival import ARCHIVABLE_STATUSES
from rearview.service.policy import TenantPolicy
from rearview.service.visibility import scoped
from rearview.shared.clock import to_iso

MAX_BROWSE_PAGE = 100
"""The most memories one `browse` call returns."""
DEFAULT_LISTING_PAGE = 25
"""How many memories the MCP listing returns when it is not given a `limit`."""
LISTING_URI = "memory://memories"
"""The MCP resource that lists pages of `browse` (query: tag, type, session_id, cursor, limit, agent_id)."""
LISTING_TEMPLATE = LISTING_URI + "{?tag,type,session_id,cursor,limit,agent_id}"
"""Its RFC 6570 template, as `resources/templates/list` shows it."""
DUE_SCAN_LIMIT = 1000
"""The most memories one `due_for_archival` call reads."""


class BrowsePage(BaseModel):
    """One page of memories, newest `updated_at` first; pass `cursor` back for the next (None: done)."""

    model_config = ConfigDict(defer_build=True)

    items: list[MemoryView]
    cursor: str | None = None
    agent_id: str | None = None
    """The agent the page was listed for (what it may see): a bound key's agent when the caller named none."""


class DueMemory(BaseModel):
    """A memory the next lifecycle run would archive, and the rule's reason."""

    model_config = ConfigDict(defer_build=True)

    memory: MemoryView
    reason: str


class DueList(BaseModel):
    """Memories due for archival; `complete` is False when the scan stopped before the end."""

    model_config = ConfigDict(defer_build=True)

    items: list[DueMemory]
    scanned: int
    complete: bool


def check_page_limit(limit: int) -> int:
    """`limit` if it is 1..`MAX_BROWSE_PAGE`, else InvalidInputError on `limit`."""
    if not 1 <= limit <= MAX_BROWSE_PAGE:
        raise InvalidInputError("limit", f"must be between 1 and {MAX_BROWSE_PAGE}, got {limit}")
    return limit


def browse_page(
    store: MemoryStore, tenant_id: str, agent_id: str, flt: MemoryFilter, cursor: str | None, limit: int
) -> tuple[list[Memory], str | None]:
    """One page of what `agent_id` may see among `flt`'s matches (raw records, newest first)."""
    page = store.list_memories(tenant_id, scoped(flt, agent_id), cursor=cursor, limit=check_page_limit(limit))
    return page.items, page.cursor


def due_reason(memory: Memory, policy: TenantPolicy, now: datetime, lookahead: timedelta) -> str | None:
    """Why the next lifecycle run would archive `memory` (the rules of `lifecycle/rules.py`), or None."""
    if memory.status not in ARCHIVABLE_STATUSES:
        return None
    decay = policy.decay
    if decay.fades(memory, now):
        return f"faded: strength {decay.effective(memory, now):.3f} < {decay.archive_threshold}"
    expires = memory.expires_at
    if (
        expires is not None
        and expires <= now + lookahead
        and policy.retention.renewal(memory, now, lookahead) is None
    ):
        return f"retention: expires {to_iso(expires)}"
    return None


def due_scan(
    store: MemoryStore,
    tenant_id: str,
    agent_id: str,
    policy: TenantPolicy,
    now: datetime,
    lookahead: timedelta,
    limit: int,
    scan_limit: int = DUE_SCAN_LIMIT,
) -> tuple[list[tuple[Memory, str]], int, bool]:
    """Up to `limit` due memories among at most `scan_limit` read: (due, scanned, complete).

    The scan reads the least recently updated first: a memory nobody has changed for longest is the
    likeliest to have faded or to be near its expiry (a recall renews both without an update, so
    this is an order to look in, not a filter), and a large tenant's due list is then filled from
    where due memories are, not from this week's.
    """
    check_page_limit(limit)
    flt = scoped(MemoryFilter(statuses=ARCHIVABLE_STATUSES), agent_id)
    due: list[tuple[Memory, str]] = []
    scanned, cursor = 0, None
    while scanned < scan_limit and len(due) < limit:
        page = store.list_memories(
            tenant_id, flt, cursor=cursor, limit=min(MAX_BROWSE_PAGE, scan_limit - scanned), oldest_first=True
        )
        scanned += len(page.items)
        for memory in page.items:
            reason = due_reason(memory, policy, now, lookahead)
            if reason is not None and len(due) < limit:
                due.append((memory, reason))
        cursor = page.cursor
        if cursor is None:
            return due, scanned, True
    return due, scanned, False
