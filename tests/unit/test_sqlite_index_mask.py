"""The SQLite index's in-memory filter mask agrees with `MemoryFilter.matches` on every combination.

The vector channel filters by this mask before ranking; a row it wrongly keeps or drops changes the
candidates. Checked over `varied_memories` (every filterable field varies) for filters combining
agent, session, types, statuses, tags, scope and time, values the index never saw, and removed rows.
"""

from __future__ import annotations

import itertools

import numpy as np

from rearview.backends.sqlite_vectors import DocRow, TenantMatrix
from rearview.models import MemoryFilter, MemoryStatus, MemoryType
from tests.factories import T0, minutes, unit_vector, varied_memories

DIMENSION = 8


def _matrix(removed: set[str]) -> tuple[TenantMatrix, list[str]]:
    tm = TenantMatrix(DIMENSION)
    rows = varied_memories()
    for i, m in enumerate(rows):
        tm.put(m.id, DocRow.of(m), unit_vector(i, DIMENSION))
    for memory_id in removed:
        tm.remove(memory_id)
    return tm, [m.id for m in rows]


def _filters() -> list[MemoryFilter]:
    agents = [None, "agent1", "nobody"]
    sessions = [None, "s2", "unknown-session"]
    types = [None, (MemoryType.EPISODIC,), (MemoryType.SEMANTIC, MemoryType.WORKING)]
    statuses = [(MemoryStatus.ACTIVE,), (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)]
    tags = [None, ("x",), ("x", "y"), ("never",)]
    out = [
        MemoryFilter(agent_id=a, session_id=s, types=t, statuses=st, tags=tg)
        for a, s, t, st, tg in itertools.product(agents, sessions, types, statuses, tags)
    ]
    out += [
        MemoryFilter(scope_key="scope1", time_from=T0 + minutes(70)),
        MemoryFilter(time_to=T0 + minutes(80), statuses=(MemoryStatus.SUPERSEDED,)),
    ]
    return out


def test_mask_matches_the_reference_filter_semantics() -> None:
    removed = {"m03", "m10", "m14"}
    tm, ids = _matrix(removed)
    memories = {m.id: m for m in varied_memories()}
    for flt in _filters():
        got = {tm.ids[r] for r in np.flatnonzero(tm.mask(flt))}
        expected = {i for i in ids if i not in removed and flt.matches(memories[i])}
        assert got == expected, flt
