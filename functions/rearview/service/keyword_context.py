"""The keyword context of a memory: its date in words and its neighbours in the same session.

A turn of a conversation often lacks the words a later question uses ("it", "that place"); the
turns around it usually have them. So the index keeps, beside each memory's own text, a
*context* the keyword channel also matches at `CONTEXT_WEIGHT` (`IndexDocument.context`):

    [8 May 2023] <up to 3 previous memories' contents>
    <up to 3 next memories' contents>

The neighbours are the memory's `NEIGHBOUR_REACH` predecessors and successors among the *active*
memories of its `session_id` (`NEIGHBOUR_TYPES`: every type, since clients write conversation
turns with whatever type they choose; but not the memories an ingest extracted from a message,
which restate one, `extracted`), in write order (`created_at`, then id), each linked only
when its event time is at most `NEIGHBOUR_GAP` from this memory's. A memory without a session
gets its date alone. The context is never embedded, stored or shown: the memory stays as
written, and the context is rebuilt from the store whenever a neighbour appears, changes or goes
(write, update, forget, archive, restore) and by `rearview reindex`.

Measured on LoCoMo's development half (benchmarks/README.md): one neighbour each side lifted
hybrid recall@10 from 0.648 to 0.766 (with the convex fusion, cross-validated); three each side
at weight 0.6 was the best the lab found under leave-one-conversation-out cross-validation, and
is what ships. Unrelated facts written back to back in one session do lend each other words,
which is why the context counts at `CONTEXT_WEIGHT` < 1 and the keyword channel's share of the
fusion stays at 0.55: 50 independent facts (benchmarks/recall/facts_recall.py) rank as well as without
any context (hybrid R@1/3/5 0.88/0.98/0.98 in one session, 0.88/0.96/0.98 with none).

Reads are bounded: a write reads the `WRITE_WINDOW` most recently updated memories of its
session (a new memory's previous neighbours are the newest ones), other changes up to
`SESSION_LIMIT`. In a longer session a neighbour outside the read may be missed until reindex.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from rearview.models import Memory, MemoryFilter, MemoryStatus, MemoryType
from rearview.ports import IndexDocument, MemoryStore

__all__ = [
    "NEIGHBOUR_GAP",
    "NEIGHBOUR_REACH",
    "NEIGHBOUR_TYPES",
    "SESSION_LIMIT",
    "WRITE_WINDOW",
    "context_text",
    "date_words",
    "documents_with_context",
    "neighbour_documents",
    "reindex_contexts",
    "session_contexts",
]

NEIGHBOUR_REACH: Final = 3
"""How many memories before and after a memory (in its session, write order) are its context."""
NEIGHBOUR_GAP: Final = timedelta(hours=6)
"""Two memories of a session further apart in event time than this are not each other's context."""
NEIGHBOUR_TYPES: Final = tuple(MemoryType)
"""The types whose memories are each other's context in a session: all (see the module docstring)."""
WRITE_WINDOW: Final = 16
"""Memories of its session a write reads (newest `updated_at` first) to find its neighbours."""
SESSION_LIMIT: Final = 1000
"""The most memories of one session read to rebuild contexts (update, forget, reindex, ...)."""
_PAGE: Final = 200

_MONTHS: Final = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def date_words(when: datetime) -> str:
    """The date as words a question uses, "8 May 2023" (English month names, whatever the locale)."""
    return f"{when.day} {_MONTHS[when.month - 1]} {when.year}"


def context_text(memory: Memory, previous: Sequence[Memory] = (), following: Sequence[Memory] = ()) -> str:
    """The date in brackets, then the previous memories' contents, then the next ones' (write order)."""
    before = "\n".join(m.content for m in previous)
    after = "\n".join(m.content for m in following)
    return f"[{date_words(memory.event_time)}] {before}\n{after}".rstrip()


def _linked(a: Memory, b: Memory) -> bool:
    return abs(a.event_time - b.event_time) <= NEIGHBOUR_GAP


def _write_order(m: Memory) -> tuple[datetime, str]:
    return (m.created_at, m.id)


def extracted(memory: Memory) -> bool:
    """Whether an ingest extracted `memory` from messages of its session (`metadata.extracted_by`)."""
    return "extracted_by" in memory.metadata


def session_contexts(members: Iterable[Memory], only: AbstractSet[str] | None = None) -> dict[str, str]:
    """The context of every memory of `members`, the active memories of one session (any order).

    An extracted memory restates a message next to it, so it is no one's neighbour (it would lend
    the same words twice); its own context is the messages around it, as theirs is. `only`, when
    given, limits the answer to those ids (the others are still each other's neighbours).
    """
    ordered = sorted(members, key=_write_order)
    said = [m for m in ordered if not extracted(m)]
    out: dict[str, str] = {}
    for m in ordered:
        if only is not None and m.id not in only:
            continue
        i = bisect_left(said, _write_order(m), key=_write_order)  # m's place among the messages
        j = i + 1 if i < len(said) and said[i].id == m.id else i
        previous = [p for p in said[max(0, i - NEIGHBOUR_REACH) : i] if _linked(p, m)]
        following = [f for f in said[j : j + NEIGHBOUR_REACH] if _linked(m, f)]
        out[m.id] = context_text(m, previous, following)
    return out


def _session(store: MemoryStore, tenant_id: str, session_id: str, limit: int) -> list[Memory]:
    """Up to `limit` active conversational memories of the session, most recently updated first."""
    flt = MemoryFilter(session_id=session_id, types=NEIGHBOUR_TYPES, statuses=(MemoryStatus.ACTIVE,))
    found: list[Memory] = []
    cursor: str | None = None
    while len(found) < limit:
        page = store.list_memories(tenant_id, flt, cursor=cursor, limit=min(_PAGE, limit - len(found)))
        found.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            break
    return found


def _by_session(memories: Iterable[Memory]) -> dict[str, list[Memory]]:
    sessions: dict[str, list[Memory]] = {}
    for m in memories:
        if m.session_id is not None and m.type in NEIGHBOUR_TYPES:
            sessions.setdefault(m.session_id, []).append(m)
    return sessions


def _neighbours(ordered: Sequence[Memory], changed: set[str]) -> set[str]:
    """Ids of the unchanged active memories within `NEIGHBOUR_REACH` of a changed one in `ordered`.

    Changed memories are skipped when counting, so both the windows before the change and after it
    are covered (a forgotten memory's far neighbours now see each other).
    """
    out: set[str] = set()
    for i, m in enumerate(ordered):
        if m.id not in changed:
            continue
        for step in (-1, 1):
            j, seen = i + step, 0
            while 0 <= j < len(ordered) and seen < NEIGHBOUR_REACH:
                if ordered[j].id not in changed:
                    seen += not extracted(ordered[j])  # the extracted ones between are re-set, not counted
                    if ordered[j].status is MemoryStatus.ACTIVE:
                        out.add(ordered[j].id)
                j += step
    return out


def _session_changes(
    store: MemoryStore,
    tenant_id: str,
    session_id: str,
    changed: Sequence[Memory],
    limit: int,
    new_ids: AbstractSet[str] = frozenset(),
) -> tuple[dict[str, str], list[IndexDocument]]:
    """Contexts of the session's active `changed` memories, and documents re-setting their neighbours'.

    When every changed memory is in `new_ids` (just created: the session held none of them before),
    a neighbour whose context the new memories leave as it was (they are out of its time gap) gets
    no document: its indexed context is already the right one.
    """
    members = {m.id: m for m in _session(store, tenant_id, session_id, limit)}
    for m in changed:  # the caller's copy is the current one (or is gone from the session)
        members.pop(m.id, None)
    ordered = sorted([*members.values(), *changed], key=_write_order)
    changed_ids = {m.id for m in changed}
    neighbours = _neighbours(ordered, changed_ids)
    active = [m for m in ordered if m.status is MemoryStatus.ACTIVE]
    contexts = session_contexts(active, changed_ids | neighbours)
    if neighbours and changed_ids <= new_ids:
        before = session_contexts((m for m in active if m.id not in changed_ids), neighbours)
        neighbours = {i for i in neighbours if before.get(i) != contexts.get(i)}
    docs = [IndexDocument(members[i], None, context=contexts[i]) for i in sorted(neighbours)]
    return contexts, docs


def neighbour_documents(
    store: MemoryStore, tenant_id: str, changed: Sequence[Memory], limit: int = SESSION_LIMIT
) -> list[IndexDocument]:
    """Vector-less documents that re-set the context of the active session neighbours of `changed`.

    `changed` are memories just written, updated, forgotten or archived, as they are now (a
    memory that is no longer active is no one's neighbour any more). One store listing per session.
    """
    docs: list[IndexDocument] = []
    for session_id, members in _by_session(changed).items():
        docs.extend(_session_changes(store, tenant_id, session_id, members, limit)[1])
    return docs


def documents_with_context(
    store: MemoryStore,
    tenant_id: str,
    docs: Sequence[IndexDocument],
    limit: int = SESSION_LIMIT,
    new_ids: AbstractSet[str] = frozenset(),
) -> list[IndexDocument]:
    """`docs` with the context of each active memory set, followed by its neighbours' new contexts.

    Documents of memories that are not active keep their indexed context (`context` None). One
    store listing per session among `docs` (none for memories without a session). `new_ids` are
    the memories among `docs` just created: a session whose changed memories are all new rewrites
    only the neighbours whose context they change.
    """
    contexts: dict[str, str] = {}
    extra: list[IndexDocument] = []
    for session_id, members in _by_session(d.memory for d in docs).items():
        session_ctx, neighbour_docs = _session_changes(store, tenant_id, session_id, members, limit, new_ids)
        contexts.update(session_ctx)
        extra.extend(neighbour_docs)
    out = [_with_context(d, contexts) for d in docs]
    return out + extra


def _with_context(doc: IndexDocument, contexts: dict[str, str]) -> IndexDocument:
    m = doc.memory
    if m.status is not MemoryStatus.ACTIVE:
        return doc
    context = contexts.get(m.id) or context_text(m)
    return replace(doc, context=context)


def reindex_contexts(store: MemoryStore, tenant_id: str, memories: Sequence[Memory]) -> dict[str, str]:
    """The context of each active memory of `memories` (for a rebuild): one listing per session."""
    contexts = {m.id: context_text(m) for m in memories if m.status is MemoryStatus.ACTIVE}
    for session_id, members in _by_session(memories).items():
        wanted = {m.id for m in members}
        session_ctx = session_contexts(_session(store, tenant_id, session_id, SESSION_LIMIT))
        contexts.update({i: c for i, c in session_ctx.items() if i in wanted})
    return contexts
