"""Letta: an agent file (`.af`: agents and their core memory blocks) and archival passages.

Shapes from letta-client 1.12 (`letta_client/types/passage.py`, `types/agents/block.py`) and
Letta's agent file format: `{"agents": [{"id", "name", "block_ids", ...}], "blocks": [{"id",
"label", "value", "description", "read_only", "limit", "metadata"}], ...}`. Archival memory is not
in an `.af`: it is the list `client.agents.passages.list(agent_id)` returns (`{"passages": [...]}`,
a JSON list, or JSON Lines), or `passages` beside `agents` in the same file.

Older agent files (and an agent's own state) hold the blocks inside the agent: `core_memory`, or
`memory.blocks`, or `memory_blocks`; a file that is one agent object (`{"name", "core_memory",
...}`) is read as a one-agent file. A file whose JSON is a string holding the agent (saved twice
encoded) is decoded once; a string that holds no agent is refused saying so.

A block is core memory. A plain block (a `human` block: one statement per line) becomes a memory
per non-blank line; a markdown block (headings `# Admins`, whole-line bold `**Boundaries**`,
numbered rules) becomes a memory per section: its heading with everything under it, so a
numbered rule keeps its heading and no memory is a bare heading. Each is a memory of the agent
that holds the block (its `name`), tagged `letta:block:<label>`: semantic, procedural for the
`persona` block. A passage (`id`, `text`, `created_at`, `tags`, `metadata`, `is_deleted`,
`archive_id`, `file_name`) is one semantic memory at `created_at` with its tags; a deleted one is
skipped. A block piece's source id is its block's id and the piece's hash, so an edited block
imports only its new pieces.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rearview.errors import InvalidInputError
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
    data = _decoded(load_json(path), path)
    if isinstance(data, dict) and isinstance(data.get("core_memory"), list) and "agents" not in data:
        data = {"agents": [data], "passages": data.get("passages", [])}  # one agent object
    if isinstance(data, dict) and isinstance(data.get("agents"), list):
        yield from _blocks(data, path)
        passages = records_in(data.get("passages", []), path)
    else:
        passages = records_in(data, path, "passages")
    for number, passage in enumerate(passages, start=1):
        source_id = f"{SOURCE}:{passage.get('id') or f'passage#{number}'}"
        yield guarded(source_id, lambda: _passage(passage, source_id))  # noqa: B023


def _decoded(data: Any, path: Path) -> Any:
    """`data`, or the document a top-level JSON string holds; InvalidInputError when it holds none."""
    if not isinstance(data, str):
        return data
    try:
        inner = json.loads(data)
    except (json.JSONDecodeError, RecursionError):
        inner = None
    if not isinstance(inner, dict | list):
        raise InvalidInputError(
            str(path),
            "is a JSON string, not a Letta agent file (an object with `agents` and `blocks`, or an "
            "agent with `core_memory`) or a list of passages",
        )
    return inner


def _blocks(agent_file: dict[str, Any], path: Path) -> Iterator[Record]:
    owner: dict[str, str] = {}
    blocks = list(records_in(agent_file.get("blocks", []), path))
    for agent in records_in(agent_file["agents"], path):
        name = str(agent.get("name") or agent.get("id") or "")
        for block_id in agent.get("block_ids") or []:
            owner.setdefault(str(block_id), name)
        given = agent.get("memory")
        memory: dict[str, Any] = given if isinstance(given, dict) else {}
        for held in (agent.get("core_memory"), agent.get("memory_blocks"), memory.get("blocks")):
            for number, block in enumerate(records_in(held or [], path), start=len(blocks) + 1):
                block_id = str(block.get("id") or f"block#{number}")
                blocks.append({**block, "id": block_id})
                owner.setdefault(block_id, name)
    for number, block in enumerate(blocks, start=1):
        block_id = str(block.get("id") or f"block#{number}")
        label = str(block.get("label") or "block")
        for text in pieces(str(block.get("value") or "")):
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


HEADING = re.compile(r"^\s*(#{1,6}\s+\S.*|\*\*[^*].*\*\*:?)\s*$")
"""A markdown heading (`# Admins`) or a line that is all bold (`**Boundaries**`)."""
NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S")


def pieces(value: str) -> list[str]:
    """A block's memories: a line each for a plain block, a section each (heading and body) for markdown.

    In a markdown block a section ends at the next heading, or at a blank line when the block has
    no heading (paragraphs); a section keeps its lines as written (numbering, bullets).
    """
    lines = value.splitlines()
    headed = any(HEADING.match(line) for line in lines)
    if not headed and not any(NUMBERED.match(line) for line in lines):
        plain = (line.strip().lstrip("-*• ").strip() for line in lines)
        return [text for text in plain if text]
    sections: list[list[str]] = [[]]
    for line in lines:
        if (HEADING.match(line) if headed else not line.strip()) and sections[-1]:
            sections.append([])
        if line.strip():
            sections[-1].append(line.rstrip())
    return ["\n".join(section).strip() for section in sections if section]


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
