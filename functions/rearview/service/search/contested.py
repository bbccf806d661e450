"""Of two conflicting memories, the newer first (issue 47): ranking's last step, and the outdated mark.

A write that states another value about an older memory's subject, without `supersedes`, marks the
older `contested_by` it (`service/write/conflicts.py`). Until one of the two is retired:

- `newer_first`: wherever a contested memory is returned, its best-scored contester among the
  search's candidates is placed directly above it, moved up if it was returned lower, added if
  it was not returned (it matched the query, only less well). The older is never dropped: when it
  is the only match, it is returned as before.
- `active_contesters`: a returned memory whose contester is still active (and visible to the
  searching agent) is shown as possibly outdated in the context block (`SearchHit.contested_by`),
  whether or not the newer was returned.

Scores are left as computed: the order is what changes, so `why` still explains each score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from rearview.models import Memory, MemoryStatus
from rearview.ports import MemoryStore
from rearview.service.search.candidates import Ranked

__all__ = ["active_contesters", "newer_first"]


def newer_first(returned: Sequence[Ranked], ranked: Sequence[Ranked]) -> list[Ranked]:
    """`returned` with each contested memory's best-scored contester from `ranked` directly above it.

    `ranked` is every candidate the search scored (`ranking.rank`), `returned` what it admitted of
    them, in order. Each memory moves at most once and has at most one contester placed above it,
    so chains (a contester itself contested) and cycles end; a contester pulled in from below
    `returned` pulls in no other, so many rewrites on one subject add one memory above the match,
    never the whole chain or every contester.
    """
    by_id = {r.memory.id: r for r in ranked}
    out = list(returned)
    was_returned = {r.memory.id for r in returned}
    moved: set[str] = set()
    placed_for: set[str] = set()  # each memory has one contester placed above it, at most
    i = 0
    while i < len(out):
        current = out[i].memory.id
        if current not in was_returned or current in placed_for:  # pulled in, or already served
            i += 1
            continue
        placed_for.add(current)
        contesters = [by_id[c] for c in out[i].memory.contested_by if c in by_id and c not in moved]
        newer = max(contesters, key=lambda r: (r.score, r.memory.id), default=None)
        if newer is None or any(r.memory.id == newer.memory.id for r in out[:i]):
            i += 1
            continue
        moved.add(newer.memory.id)
        out = [r for r in out if r.memory.id != newer.memory.id]
        out.insert(i, newer)  # the contested memory is now at i + 1; the newer is looked at next
    return out


def active_contesters(
    store: MemoryStore,
    tenant_id: str,
    memories: Iterable[Memory],
    held: Mapping[str, Memory],
    agent_id: str,
    now: datetime,
) -> dict[str, list[str]]:
    """Memory id -> its contesters that are active, unexpired and visible to `agent_id`, for those with any.

    `held` are memories already read (the search's candidates, all active); the others are read
    in one `get_many`, and only when a returned memory is contested at all.
    """
    wanted = {m.id: m.contested_by for m in memories if m.contested_by}
    missing = sorted({c for ids in wanted.values() for c in ids if c not in held})
    found = {m.id: m for m in store.get_many(tenant_id, missing)} if missing else {}
    out = {}
    for memory_id, ids in wanted.items():
        live = [c for c in ids if _live(held.get(c) or found.get(c), agent_id, now)]
        if live:
            out[memory_id] = live
    return out


def _live(memory: Memory | None, agent_id: str, now: datetime) -> bool:
    return (
        memory is not None
        and memory.status is MemoryStatus.ACTIVE
        and not memory.is_expired(now)
        and memory.visible_to(agent_id)
    )
