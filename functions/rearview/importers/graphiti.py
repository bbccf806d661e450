"""Graphiti (and Zep, which is built on it): a graph's facts (`EntityEdge`) and episodes (`EpisodicNode`).

Graphiti has no export file of its own: what it stores are pydantic models (graphiti-core 0.31,
`graphiti_core/edges.py`, `graphiti_core/nodes.py`), and an export is their JSON dumps. Accepted:
an object `{"edges": [...], "episodes": [...]}` (either key may be missing), a JSON list, or JSON
Lines; a record with `fact` is an edge, one with `content` an episode. Zep's facts have the same
fields (`uuid`, `fact`, `name`, `valid_at`, `invalid_at`, `expired_at`, `created_at`): they are the
same edge model, so a record's identity is the same whichever name reads it (`graphiti:<uuid>`,
also found under `zep:<uuid>`, the id an earlier `--from zep` gave it): importing one export with
`--from zep` after `--from graphiti` (or the other way) writes nothing twice.

An edge: `uuid`, `group_id`, `source_node_uuid`, `target_node_uuid`, `created_at`, `name` (the
relation), `fact`, `episodes`, `valid_at`, `invalid_at`, `expired_at`, `attributes`. It becomes a
semantic memory: `fact` -> content, `valid_at` (else `created_at`) -> `event_time`, `name` -> tag
`relation:<name>`, `group_id` -> tag `group:<id>`, the node ids, times and scalar `attributes` ->
metadata.

A fact that is no longer true (`invalid_at` or `expired_at` set) is not imported as active. When a
current edge of the file replaces it (same source node and relation, valid from when the old one
stopped), it is imported and then superseded by that edge, as Rearview records a correction;
otherwise it is skipped, saying when it stopped being true.

An episode (`uuid`, `name`, `group_id`, `source`, `source_description`, `content`, `valid_at`,
`created_at`) is what happened: an episodic memory at `valid_at`, tagged `episode:<source>`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

from rearview.importers.records import (
    Candidate,
    Labels,
    Record,
    Skipped,
    flat_metadata,
    guarded,
    lenient_time,
    load_json,
    records_in,
    scalar_items,
    time_of,
)
from rearview.models import MemoryType

SOURCE = "graphiti"
ALIASES = ("zep",)
"""The other name of these records' ids: `--from zep` once wrote `zep:<uuid>`."""


def read(path: Path) -> Iterator[Record]:
    """The file's edges (current ones, and invalidated ones a current edge replaces) and episodes."""
    data = load_json(path)
    if isinstance(data, dict) and ("edges" in data or "episodes" in data):
        records = [*records_in(data.get("edges", []), path), *records_in(data.get("episodes", []), path)]
    else:
        records = records_in(data, path, "edges", "facts", "episodes")
    successors = _successors([r for r in records if "fact" in r])
    replaced = _chains(successors)
    for number, record in enumerate(records, start=1):
        source_id = f"{SOURCE}:{record.get('uuid') or f'#{number}'}"
        aliases = tuple(f"{name}:{record['uuid']}" for name in ALIASES) if record.get("uuid") else ()
        if "fact" not in record:
            yield guarded(source_id, lambda: _episode(record, source_id, aliases))  # noqa: B023
            continue
        ended = _ended(record)
        if ended is not None and id(record) not in successors:
            yield Skipped(source_id, f"invalid since {ended.isoformat()} and no current fact replaces it")
            continue
        old = replaced.get(id(record))
        replaces = f"{SOURCE}:{old['uuid']}" if old is not None and old.get("uuid") else None
        yield guarded(source_id, lambda: _edge(record, source_id, replaces, aliases))  # noqa: B023


_MIN = datetime.min.replace(tzinfo=UTC)
_MAX = datetime.max.replace(tzinfo=UTC)
_SLACK = timedelta(days=1)
"""How long before an old edge's end its replacement may start (Graphiti dates the two apart)."""


def _ended(edge: dict[str, Any]) -> datetime | None:
    """When the fact stopped being true (`invalid_at`, else `expired_at`), None while it holds."""
    return lenient_time(edge.get("invalid_at"), "invalid_at") or lenient_time(
        edge.get("expired_at"), "expired_at"
    )


def _successors(edges: list[dict[str, Any]]) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
    """For each invalidated edge (by `id()`): it and the current edge that replaced it.

    The replacement is the first current edge of the file with the same source node, relation and
    group that became valid when the old one ended (or after; within a day before counts: Graphiti
    dates a contradiction by the new episode, the old edge's end by its own), or has no time.
    Edges are grouped by relation, each time read once, and the first such edge found by bisection
    over the group's running latest start: O(n log n) in the file, however edges share a relation.
    """
    groups: dict[tuple[object, ...], tuple[list[dict[str, Any]], list[datetime]]] = {}
    for edge in edges:
        if edge.get("name") and _ended(edge) is None:
            current, latest = groups.setdefault(_relation(edge), ([], []))
            valid = lenient_time(edge.get("valid_at"), "valid_at") or lenient_time(
                edge.get("created_at"), "created_at"
            )
            start = _MAX if valid is None else valid  # no time: it replaces anything
            current.append(edge)
            latest.append(max(latest[-1], start) if latest else start)
    found: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for edge in edges:
        ended = _ended(edge)
        group = groups.get(_relation(edge)) if ended is not None else None
        if ended is None or group is None:
            continue
        current, latest = group
        since = ended - _SLACK if ended > _MIN + _SLACK else _MIN
        first = bisect_left(latest, since)  # the first edge that starts no earlier
        if first < len(current):
            found[id(edge)] = (edge, current[first])
    return found


def _chains(successors: dict[int, tuple[dict[str, Any], dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    """Edge (by `id()`) -> the edge it supersedes.

    A current edge's invalidated predecessors, in the order they ended: each is superseded by the
    next, and the last by the current edge.
    """
    lines: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for old, new in successors.values():
        lines.setdefault(id(new), (new, []))[1].append(old)
    replaced: dict[int, dict[str, Any]] = {}
    for current, olds in lines.values():
        line = [*sorted(olds, key=lambda e: _ended(e) or _MIN), current]
        replaced.update((id(later), earlier) for earlier, later in pairwise(line))
    return replaced


def _relation(edge: dict[str, Any]) -> tuple[object, ...]:
    return (edge.get("source_node_uuid"), edge.get("name"), edge.get("group_id"))


def _edge(edge: dict[str, Any], source_id: str, replaces: str | None, aliases: tuple[str, ...]) -> Candidate:
    """An edge as a semantic memory; `replaces` is the source id of the invalidated edge it supersedes."""
    tags = Labels()
    tags.add(f"relation:{edge['name']}" if edge.get("name") else None)
    tags.add(f"group:{edge['group_id']}" if edge.get("group_id") else None)
    attributes = edge.get("attributes") if isinstance(edge.get("attributes"), dict) else {}
    fields: dict[str, Any] = {
        "content": edge.get("fact") or "",
        "type": MemoryType.SEMANTIC,
        "event_time": _when(edge),
        "tags": tags.items,
        "metadata": {
            **flat_metadata(attributes),
            **scalar_items(
                edge, "name", "group_id", "source_node_uuid", "target_node_uuid", "created_at", "valid_at",
                "invalid_at", "expired_at",
            ),
        },
    }  # fmt: skip
    return Candidate(source_id, fields, replaces, aliases=aliases)


def _episode(episode: dict[str, Any], source_id: str, aliases: tuple[str, ...]) -> Record:
    tags = Labels()
    tags.add(f"episode:{episode['source']}" if episode.get("source") else None)
    tags.add(f"group:{episode['group_id']}" if episode.get("group_id") else None)
    fields: dict[str, Any] = {
        "content": episode.get("content") or "",
        "type": MemoryType.EPISODIC,
        "event_time": _when(episode),
        "tags": tags.items,
        "metadata": scalar_items(episode, "name", "group_id", "source_description", "created_at"),
    }  # fmt: skip
    return Candidate(source_id, fields, aliases=aliases)


def _when(record: dict[str, Any]) -> datetime | None:
    """When it became true, or happened: `valid_at`, else `created_at` (InvalidInputError naming it)."""
    return time_of(record.get("valid_at"), "valid_at") or time_of(record.get("created_at"), "created_at")
