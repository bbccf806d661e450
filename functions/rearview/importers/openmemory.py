"""OpenMemory (mem0's self-hosted MCP memory, `openmemory/api`): its memories export.

Accepted: the export's `memories.json` (an object with `memories`, and `apps` to name an app by
id) or its `memories.jsonl` (one memory a line), unpacked from the export's archive. A memory:
`id`, `content`, `state` (`active`, `paused`, `archived`, `deleted`), `app` (its name; or `app_id`
named by `apps`), `categories` (names), `metadata` (or `metadata_`), `user_id`, `created_at`,
`updated_at`, `archived_at`, `deleted_at`.

Mapping: `content` -> content, semantic; the app (the MCP client that wrote it: `cursor`,
`claude`, ...) -> `agent_id`; `categories` -> tags; `created_at` -> `created_at` (age, retention
and decay count from it; `event_time` defaults to it); `user_id` -> the record's user
(`--per-user`); `user_id`, `updated_at` and `metadata` -> metadata. `active` memories are
imported; `paused` ones too, tagged `paused` (OpenMemory hid them from apps, and the tag lets a
search leave them out);
`archived` and `deleted` ones are skipped (the user took them out of use).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rearview.importers.records import (
    Candidate,
    Labels,
    Record,
    Skipped,
    flat_metadata,
    guarded,
    load_json,
    records_in,
    scalar_items,
    time_of,
)
from rearview.models import MemoryType

SOURCE = "openmemory"
IMPORTED_STATES = frozenset({"active", "paused"})
STATES = ("active", "paused", "archived", "deleted")


def read(path: Path) -> Iterator[Record]:
    """Each memory of the export as a candidate, or skipped for its state."""
    data = load_json(path)
    listed = data.get("apps") if isinstance(data, dict) else None
    apps = {
        str(a["id"]): str(a["name"])
        for a in listed or []
        if isinstance(a, dict) and a.get("id") and a.get("name")
    }
    for number, record in enumerate(records_in(data, path, "memories"), start=1):
        yield guarded(_source_id(record, number), lambda: mapped(record, number, apps))  # noqa: B023


def _source_id(record: dict[str, Any], number: int) -> str:
    return f"{SOURCE}:{record.get('id') or f'#{number}'}"


def mapped(record: dict[str, Any], number: int, apps: dict[str, str]) -> Record:
    """One memory (the `number`th of its file, for one without an id); `apps` names apps by id."""
    source_id = _source_id(record, number)
    state = str(record.get("state") or "active").lower()
    if state not in IMPORTED_STATES:
        why = (
            f"{state} in OpenMemory"
            if state in STATES
            else f"unknown state {state!r} (known: {', '.join(STATES)})"
        )
        return Skipped(source_id, why)
    tags = Labels()
    for category in record.get("categories") or []:
        tags.add(category.get("name") if isinstance(category, dict) else category)
    if state == "paused":
        tags.add("paused")
    metadata = record.get("metadata") or record.get("metadata_")
    fields: dict[str, Any] = {
        "content": record.get("content") or record.get("memory") or "",
        "type": MemoryType.SEMANTIC,
        "created_at": time_of(record.get("created_at"), "created_at"),
        "tags": tags.items,
        "metadata": {
            **flat_metadata(metadata if isinstance(metadata, dict) else {}),
            **scalar_items(record, "user_id", "updated_at"),
        },
    }
    app = _app(record, apps)
    if app:
        fields["agent_id"] = app
    user = record.get("user_id")
    return Candidate(source_id, fields, user=str(user) if user else None)


def _app(record: dict[str, Any], apps: dict[str, str]) -> str | None:
    app = record.get("app")
    if isinstance(app, dict):
        app = app.get("name")
    name = app or record.get("app_name") or apps.get(str(record.get("app_id")))
    return str(name) if name else None
