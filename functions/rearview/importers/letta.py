"""Letta: an agent file (`.af`: agents and their core memory blocks) and archival passages.

Shapes from letta-client 1.12 (`letta_client/types/passage.py`, `types/agents/block.py`) and
Letta's agent file format: `{"agents": [{"id", "name", "block_ids", ...}], "blocks": [{"id",
"label", "value", "description", "read_only", "limit", "metadata"}], ...}`. Archival memory is not
in an `.af`: it is the list `client.agents.passages.list(agent_id)` returns (`{"passages": [...]}`,
a JSON list, or JSON Lines), or `passages` beside `agents` in the same file.

A block is core memory: one statement per line (a `human` block lists what the agent knows about
its user, a `persona` block how it should behave), so each non-blank line becomes a memory of the
agent that holds the block (its `name`), tagged `letta:block:<label>`: semantic, procedural for the
`persona` block. A passage (`id`, `text`, `created_at`, `tags`, `metadata`, `is_deleted`,
`archive_id`, `file_name`) is one semantic memory at `created_at` with its tags; a deleted one is
skipped. A block line's source id is its block's id and the line's hash, so an edited block
imports only its new lines.
"""

from __future__ import annotations

import hashlib
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

SOURCE = "letta"
PROCEDURAL_BLOCKS = frozenset({"persona"})


def read(path: Path) -> Iterator[Record]:
    """The core memory blocks of an agent file and the archival passages of a file."""
    data = load_json(path)
    if isinstance(data, dict) and isinstance(data.get("agents"), list):
        yield from _blocks(data, path)
        passages = records_in(data.get("passages", []), path)
    else:
        passages = records_in(data, path, "passages")
    for number, passage in enumerate(passages, start=1):
        source_id = f"{SOURCE}:{passage.get('id') or f'passage#{number}'}"
        yield guarded(source_id, lambda: _passage(passage, source_id))  # noqa: B023


def _blocks(agent_file: dict[str, Any], path: Path) -> Iterator[Record]:
    owner: dict[str, str] = {}
    for agent in records_in(agent_file["agents"], path):
        for block_id in agent.get("block_ids") or []:
            owner.setdefault(str(block_id), str(agent.get("name") or agent.get("id") or ""))
    for number, block in enumerate(records_in(agent_file.get("blocks", []), path), start=1):
        block_id = str(block.get("id") or f"block#{number}")
        label = str(block.get("label") or "block")
        for line in str(block.get("value") or "").splitlines():
            text = line.strip().lstrip("-*• ").strip()
            if not text:
                continue
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
            fields: dict[str, Any] = {
                "content": text,
                "type": MemoryType.PROCEDURAL if label in PROCEDURAL_BLOCKS else MemoryType.SEMANTIC,
                "tags": [f"letta:block:{label}"],
                "metadata": {"letta_block_id": block_id, "letta_block_label": label},
            }
            if owner.get(block_id):
                fields["agent_id"] = owner[block_id]
            yield Candidate(f"{SOURCE}:{block_id}:{digest}", fields)


def _passage(passage: dict[str, Any], source_id: str) -> Record:
    if passage.get("is_deleted"):
        return Skipped(source_id, "deleted in Letta")
    tags = Labels()
    tags.add(*(passage.get("tags") or []))
    metadata = passage.get("metadata") if isinstance(passage.get("metadata"), dict) else {}
    fields: dict[str, Any] = {
        "content": passage.get("text") or "",
        "type": MemoryType.SEMANTIC,
        "event_time": time_of(passage.get("created_at"), "created_at"),
        "tags": tags.items,
        "metadata": {
            **flat_metadata(metadata),
            **scalar_items(passage, "archive_id", "file_name", "source_id", "updated_at"),
        },
    }
    return Candidate(source_id, fields)
