"""After ranking: a memory extracted from a message and that message's own memory take one place.

An ingest keeps each message as an episode and adds what it extracts from it (`ingest`): the fact
"Ann prefers window seats" and the turn "Ann: ... I always prefer them" answer the same queries,
so without this step they take two of the top k places, and a top k holds fewer distinct pieces
of evidence than it would without extraction (LoCoMo, benchmarks/recall/ingest_recall.py).

`collapse_extracted` walks the ranking best first and keeps a memory unless it is linked to one
already kept: an extracted memory (`metadata.extracted_by`) whose `derived_from` names the kept
one, or the source of a kept extracted memory. The one ranked higher keeps its place and lists
the other in `related` (so a caller can still `memory_get` it); scores and order are untouched,
only the later duplicate gives up its place to the next memory. Only extraction links collapse:
a summary (`derived_from` its sources) stands for many memories and collapses with none.

Copies of one text in one dedup scope collapse too: two agents that wrote the same fact each hold
their own memory (a write corroborates another agent's copy instead of merging into it:
`write.duplicates`), and a search shows it once. The place goes to the searching agent's own
copy when it has one (the other is listed in `related`), so what it reads is what it may change;
else to the better ranked copy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rearview.models import Memory
from rearview.service.search.candidates import Ranked

__all__ = ["Collapsed", "collapse_extracted"]


@dataclass(slots=True)
class Collapsed:
    """A kept ranked memory and the ids of the lower-ranked memories folded into it."""

    ranked: Ranked
    related: list[str] = field(default_factory=list)


def _sources(memory: Memory) -> list[str]:
    """The memories `memory` was extracted from (none unless an ingest extracted it)."""
    return memory.derived_from if "extracted_by" in memory.metadata else []


def collapse_extracted(ranked: Iterable[Ranked], limit: int, agent_id: str | None = None) -> list[Collapsed]:
    """The first `limit` memories of `ranked` (best first) not linked to a better one (module docstring).

    A copy of a better one's text is folded into it (`agent_id`'s own copy taking the place).
    Two memories extracted from the same message are not linked to each other (each states its
    own fact): they collapse only with the message's memory, not with each other.
    """
    kept: list[Collapsed] = []
    by_id: dict[str, Collapsed] = {}  # a kept memory's id -> its entry
    by_source: dict[str, Collapsed] = {}  # a kept extracted memory's source -> its entry
    by_text: dict[tuple[str, str], Collapsed] = {}  # a kept memory's (scope, content hash) -> its entry
    for r in ranked:
        memory = r.memory
        copy = by_text.get((memory.scope_key, memory.content_hash))
        if copy is not None:
            _fold_copy(copy, r, agent_id)
            by_id[memory.id] = copy
            continue
        into = by_source.get(memory.id) or next((by_id[s] for s in _sources(memory) if s in by_id), None)
        if into is not None:
            into.related.append(memory.id)
            continue
        if len(kept) == limit:
            break
        entry = Collapsed(r)
        kept.append(entry)
        by_id[memory.id] = entry
        by_text[(memory.scope_key, memory.content_hash)] = entry
        for source in _sources(memory):
            by_source.setdefault(source, entry)
    return kept


def _fold_copy(entry: Collapsed, copy: Ranked, agent_id: str | None) -> None:
    """Fold `copy` (the text of `entry`, ranked lower) into `entry`: the agent's own holds the place."""
    held = entry.ranked.memory
    if agent_id is not None and copy.memory.agent_id == agent_id and held.agent_id != agent_id:
        entry.related.insert(0, held.id)
        entry.ranked = copy
    else:
        entry.related.append(copy.memory.id)
