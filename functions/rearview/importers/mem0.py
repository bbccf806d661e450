"""mem0: the records of `Memory.get_all()` (mem0ai 2.x, `mem0/memory/main.py`) or the platform's export.

Accepted: the `get_all` result `{"results": [...]}`, a JSON list of its records, or JSON Lines.
A record: `id`, `memory` (the text), `hash`, `metadata`, `created_at`, `updated_at`, the scopes
`user_id`, `agent_id`, `run_id`, `actor_id`, `role`, and on the platform `categories` and
`expiration_date`.

Mapping: `memory` -> content; semantic, or procedural for mem0's procedural memories
(`metadata.memory_type == "procedural_memory"`); `created_at` -> `created_at` (the memory's
creation time: its age, retention and decay count from it; `event_time` defaults to it);
`agent_id` -> `agent_id`; `run_id` -> `session_id`; `user_id` -> the record's user (`--per-user`)
and tag `user:<id>`; `categories` -> tags; the rest of `metadata` and `hash`, `updated_at`,
`user_id`, `actor_id`, `role` -> metadata; a future `expiration_date` -> `ttl_days` counted from
`created_at` (at most `MAX_TTL_DAYS`: a later one is clamped). A record past its
`expiration_date` is skipped (mem0 hides it too). mem0 keeps only current memories (an update
rewrites the record; a delete removes it), so there is nothing superseded to carry over.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from rearview.importers.records import (
    Candidate,
    Labels,
    Record,
    Skipped,
    flat_metadata,
    guarded,
    read_json_records,
    scalar_items,
    time_of,
)
from rearview.limits import MAX_TTL_DAYS
from rearview.models import MemoryType

SOURCE = "mem0"
PROCEDURAL = "procedural_memory"


def read(path: Path, now: datetime | None = None) -> Iterator[Record]:
    """Each mem0 record of the file as a candidate, or skipped when it expired."""
    today = (now or datetime.now(UTC)).date()
    for number, record in enumerate(read_json_records(path, "results", "memories"), start=1):
        yield guarded(_source_id(record, number), lambda: mapped(record, number, today))  # noqa: B023


def _source_id(record: dict[str, Any], number: int) -> str:
    return f"{SOURCE}:{record.get('id') or f'#{number}'}"


def mapped(record: dict[str, Any], number: int, today: date) -> Record:
    """One record (the `number`th of its file, for one without an id)."""
    source_id = _source_id(record, number)
    expires = _expiration(record.get("expiration_date"))
    if expires is not None and expires < today:
        return Skipped(source_id, f"expired on {expires.isoformat()} in mem0")
    given = record.get("metadata")
    metadata_in: dict[str, Any] = given if isinstance(given, dict) else {}
    created = time_of(record.get("created_at"), "created_at")
    tags = Labels()
    if record.get("user_id"):
        tags.add(f"user:{record['user_id']}")
    tags.add(*(record.get("categories") or []))
    fields: dict[str, Any] = {
        "content": record.get("memory") or record.get("text") or "",
        "type": MemoryType.PROCEDURAL
        if metadata_in.get("memory_type") == PROCEDURAL
        else MemoryType.SEMANTIC,
        "created_at": created,
        "tags": tags.items,
        "metadata": {
            **flat_metadata(metadata_in, frozenset({"memory_type"})),
            **scalar_items(record, "hash", "updated_at", "user_id", "actor_id", "role"),
        },
    }
    if record.get("agent_id"):
        fields["agent_id"] = record["agent_id"]
    if record.get("run_id"):
        fields["session_id"] = record["run_id"]
    if expires is not None:  # a far-future expiry (9999-12-31) is the longest a memory may keep
        since = created.date() if created is not None else today  # the ttl counts from creation
        fields["ttl_days"] = min(max((expires - since).days, 1), MAX_TTL_DAYS)
    user = record.get("user_id")
    return Candidate(source_id, fields, user=str(user) if user else None)


def _expiration(value: object) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None  # mem0 ignores an expiration it cannot read, and so does the import
