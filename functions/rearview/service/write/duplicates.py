"""A write's duplicate in its dedup scope: its own writer's first, else another agent's to corroborate.

Authorship (DESIGN.md, issue 45.4): a write merges only into a memory its own agent wrote. When
another agent already holds the fact (a shared scope), the write is stored as the writer's own
memory that `corroborates` the other (`Corroboration`): a merge would hand the writer's claim to
the other agent, whose later edit would change it and whose erasure would remove it. A search then
shows equal copies once (`search.collapse`), the caller's own first.

`find_duplicate` prefers, in order: the writer's exact duplicate, its near duplicate, another
agent's exact duplicate, another's near duplicate. `Match.exact` says whether the content hashes
are equal: a near duplicate whose vectors happen to be identical (cosine 1.0) is still near, and
still goes through the contradiction and information-difference checks (`Writer.decide`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from rearview.errors import IndexUnavailableError
from rearview.models import Memory, MemoryFilter, MemoryStatus, Visibility, WriteRequest
from rearview.ports import IndexQuery, MemoryIndex, MemoryStore, Vector
from rearview.shared.scopes import legacy_scope_key, scope_key

__all__ = ["Corroboration", "Match", "find_duplicate"]

log = logging.getLogger(__name__)

NEAR_CANDIDATES = 4
"""Nearest neighbours read for a near duplicate (besides the excluded ids): room for the writer's
own near duplicate behind other agents' copies of the same fact."""


class Draft(Protocol):
    """What the lookup reads of a write's draft (`decision.Draft`)."""

    @property
    def req(self) -> WriteRequest: ...
    @property
    def scope_key(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def vector(self) -> Vector | None: ...


@dataclass(frozen=True, slots=True)
class Match:
    """A duplicate of the write: `exact` when its content hash is the write's, `own` when its writer's."""

    memory: Memory
    similarity: float
    exact: bool
    own: bool
    """Whether the write's agent wrote it: a write merges only into its own (else it corroborates)."""


@dataclass(frozen=True, slots=True)
class Corroboration:
    """Another agent's active duplicate that a write corroborates: linked, never merged into."""

    memory: Memory
    similarity: float


def find_duplicate(
    store: MemoryStore,
    index: MemoryIndex,
    threshold: float,
    tenant_id: str,
    draft: Draft,
    excluded: frozenset[str],
) -> Match | None:
    """The write's duplicate in its scope that its writer may see, its own preferred (module docstring).

    A memory stored before scope keys were escaped is looked up under its legacy key too (the
    stores that do not migrate are re-keyed on read); every candidate is re-checked against the
    draft's own scope and visibility, so no key, legacy or forged, merges across agents.
    """
    # One lookup when no agent holds the text (the common case); a second only when another does.
    exact = _exact(store, tenant_id, draft, excluded, None)
    if exact is not None and exact.own:
        return exact
    own_exact = None
    if exact is not None and draft.req.visibility is Visibility.SHARED:  # private scopes: the writer's only
        own_exact = _exact(store, tenant_id, draft, excluded, draft.req.agent_id)
    if own_exact is not None:
        return own_exact
    other_exact = exact
    near = _near(store, index, threshold, tenant_id, draft, excluded)
    own_near = next((m for m in near if m.own), None)
    return own_near or other_exact or next(iter(near), None)


def _exact(
    store: MemoryStore, tenant_id: str, draft: Draft, excluded: frozenset[str], agent_id: str | None
) -> Match | None:
    req = draft.req
    legacy = legacy_scope_key(req.type, req.visibility, req.agent_id, req.session_id)
    for key in dict.fromkeys((draft.scope_key, legacy)):
        found = store.find_by_hash(tenant_id, key, draft.digest, agent_id)
        if found is not None and found.id not in excluded and _in_scope(found, draft):
            return Match(found, 1.0, True, found.agent_id == req.agent_id)
    return None


def _near(
    store: MemoryStore,
    index: MemoryIndex,
    threshold: float,
    tenant_id: str,
    draft: Draft,
    excluded: frozenset[str],
) -> list[Match]:
    """The active near duplicates in the draft's scope, nearest first (none without a vector or an index)."""
    if draft.vector is None:
        return []
    query = IndexQuery(
        tenant_id=tenant_id, filter=MemoryFilter(scope_key=draft.scope_key),
        limit=NEAR_CANDIDATES + len(excluded), vector=draft.vector, match_cues=False,
    )  # fmt: skip
    try:
        hits = index.search(query)
    except IndexUnavailableError:
        log.warning("near-duplicate check skipped: index unavailable")
        return []
    near = [(i, s) for i, s in hits.vector if i not in excluded and s >= threshold]
    found = {m.id: m for m in store.get_many(tenant_id, [i for i, _ in near])}
    return [
        Match(found[i], s, found[i].content_hash == draft.digest, found[i].agent_id == draft.req.agent_id)
        for i, s in near
        if i in found and active_in_scope(found[i], draft)
    ]


def active_in_scope(candidate: Memory | None, draft: Draft) -> TypeGuard[Memory]:
    """Whether `candidate` is active and `_in_scope`."""
    return candidate is not None and candidate.status is MemoryStatus.ACTIVE and _in_scope(candidate, draft)


def _in_scope(candidate: Memory, draft: Draft) -> bool:
    """Whether `candidate` is in the draft's dedup scope by its own fields and visible to its writer."""
    own_key = scope_key(candidate.type, candidate.visibility, candidate.agent_id, candidate.session_id)
    return own_key == draft.scope_key and candidate.visible_to(draft.req.agent_id)
