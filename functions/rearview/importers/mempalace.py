"""MemPalace: the folder `mempalace export` writes (mempalace 3.11, `mempalace/exporter.py`).

The export is `index.md` and one markdown file per room, `<wing>/<room>.md`, each drawer a section:

    ## <drawer id>

    > <the drawer's verbatim text, every line quoted>

    | Field | Value |
    |-------|-------|
    | Source | <source file> |
    | Filed | <filed_at> |
    | Added by | <agent> |

Accepted: the export folder, or one room file; a link to a file outside the folder is skipped. A
drawer is verbatim text the palace filed (a chunk of a conversation or a project file): an episodic
memory at `filed_at`, tagged `wing:<wing>` and `room:<room>`, written by its `Added by` agent, its
source file in metadata. MemPalace writes `filed_at` in local time without a zone: it is read as
UTC. A field the export wrote as `unknown` is left out. MemPalace keeps no superseded drawers in the
export (its knowledge graph, where facts end, is a separate database, not imported).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rearview.importers.records import Candidate, Record, Skipped, guarded, iter_files, read_text, time_of
from rearview.models import MemoryType

SOURCE = "mempalace"
_DRAWER = re.compile(r"^## (?P<id>.+?)\s*$", re.MULTILINE)
_ROW = re.compile(r"^\| (?P<key>Source|Filed|Added by) \| (?P<value>.*?) \|\s*$", re.MULTILINE)


def read(path: Path) -> Iterator[Record]:
    """Every drawer of every room file under `path` (the index is not a room).

    A room file that is a link to a file outside the folder (or under a linked folder that leaves
    it) is skipped, never read: an export is the folder's own files.
    """
    root = path.resolve() if path.is_dir() else path.resolve().parent
    for room_file in iter_files(path, ".md"):
        if room_file.name == "index.md":
            continue
        if not room_file.resolve().is_relative_to(root):
            where = room_file.relative_to(path).as_posix() if path.is_dir() else room_file.name
            yield Skipped(f"{SOURCE}:{where}", "a link to a file outside the export folder: not read")
            continue
        wing = room_file.parent.name if room_file.parent != path else "unknown"
        room = room_file.stem
        yield from _drawers(read_text(room_file), wing, room)


def _drawers(text: str, wing: str, room: str) -> Iterator[Record]:
    heads = list(_DRAWER.finditer(text))
    for i, head in enumerate(heads):
        body = text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        quoted = [line[1:].removeprefix(" ") for line in body.splitlines() if line.startswith(">")]
        rows = {m["key"]: m["value"] for m in _ROW.finditer(body) if m["value"] not in ("", "unknown")}
        source_id = f"{SOURCE}:{head['id']}"
        yield guarded(source_id, lambda: _drawer(source_id, quoted, rows, wing, room))  # noqa: B023


def _drawer(source_id: str, quoted: list[str], rows: dict[str, str], wing: str, room: str) -> Record:
    fields: dict[str, Any] = {
        "content": "\n".join(quoted),
        "type": MemoryType.EPISODIC,
        "event_time": time_of(rows.get("Filed"), "filed_at"),
        "tags": [f"wing:{wing}", f"room:{room}"],
        "metadata": {
            k: v for k, v in (("source_file", rows.get("Source")), ("wing", wing), ("room", room)) if v
        },
    }
    if rows.get("Added by"):
        fields["agent_id"] = rows["Added by"]
    return Candidate(source_id, fields)
