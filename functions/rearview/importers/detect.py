"""Which other memory system wrote a JSON document, if any.

So `rearview import FILE` and `rearview ingest FILE` name `--from SOURCE` instead of misreading it.

Cheap and conservative: it looks at the document's top-level keys and its first record only, and
answers None unless a field only that source writes is there.
"""

from __future__ import annotations

from typing import Any

from rearview.errors import InvalidInputError

MEM0_KEYS = frozenset({"hash", "user_id", "agent_id", "run_id", "created_at", "updated_at", "metadata"})
OPENMEMORY_KEYS = frozenset({"state", "app", "app_id", "app_name"})


def source_of(data: Any) -> str | None:
    """The `--from` source whose export `data` (a loaded document, or its first line) is; else None."""
    if isinstance(data, dict):
        if isinstance(data.get("agents"), list) or isinstance(data.get("core_memory"), list):
            return "letta"
        if isinstance(data.get("edges"), list) or isinstance(data.get("episodes"), list):
            return "graphiti"
        listed = next(
            (data[k] for k in ("results", "memories", "facts") if isinstance(data.get(k), list)), None
        )
        return _record_source(listed[0] if listed else data)
    if isinstance(data, list) and data:
        return _record_source(data[0])
    return None


def _record_source(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("memory"), str) and MEM0_KEYS & record.keys():
        return "mem0"
    if isinstance(record.get("fact"), str) and "uuid" in record:
        return "graphiti"
    if isinstance(record.get("content"), str) and OPENMEMORY_KEYS & record.keys() and "id" in record:
        return "openmemory"
    return None


def refuse_export(where: str, data: Any, path: object) -> None:
    """InvalidInputError naming `--from SOURCE` when `data` is another system's export."""
    source = source_of(data)
    if source is not None:
        raise InvalidInputError(
            where,
            f"this is a {source} export, not Rearview memories or a conversation: "
            f"use `rearview import --from {source} {path}`",
        )
