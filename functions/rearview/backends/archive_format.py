"""The archive object format shared by `S3Archive` and `DirectoryArchive` (one decision, one place).

An object is gzip JSON Lines; each line is one archived memory, `{"v": 1, "memory": {...},
"history": [...]}` (the pydantic JSON of `Memory` and its `HistoryEvent`s, oldest first).
Objects live at `tenant=<tenant, URL-quoted>/date=<YYYY-MM-DD>/<ulid>.jsonl.gz`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Final
from urllib.parse import quote

from rearview.errors import ArchiveError, InvalidInputError
from rearview.models import HistoryEvent, Memory
from rearview.shared.ids import new_id

FORMAT_VERSION: Final = 1
SUFFIX: Final = ".jsonl.gz"

Entry = tuple[Memory, list[HistoryEvent]]


def tenant_prefix(tenant_id: str) -> str:
    """`tenant=<quoted tenant>/`: every object of a tenant lives under it."""
    return f"tenant={quote(tenant_id, safe='')}/"


def object_name(tenant_id: str, now: datetime) -> str:
    """Where a batch archived at `now` goes (relative to the archive root)."""
    return f"{tenant_prefix(tenant_id)}date={now:%Y-%m-%d}/{new_id(now)}{SUFFIX}"


def checked_entry(tenant_id: str, memory: Memory, history: Sequence[HistoryEvent]) -> Entry:
    """The entry, if the memory and every event belong to `tenant_id` and to each other."""
    if memory.tenant_id != tenant_id:
        raise InvalidInputError("items", f"memory {memory.id} belongs to another tenant")
    for event in history:
        if event.memory_id != memory.id or event.tenant_id != tenant_id:
            raise InvalidInputError(
                "items", f"history event {event.id} does not belong to memory {memory.id}"
            )
    return memory, list(history)


def encode(entries: Sequence[Entry]) -> bytes:
    """The object's bytes; `mtime=0` so the same batch always compresses to the same bytes."""
    lines = (
        json.dumps(
            {
                "v": FORMAT_VERSION,
                "memory": memory.model_dump(mode="json"),
                "history": [event.model_dump(mode="json") for event in history],
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for memory, history in entries
    )
    return gzip.compress("".join(line + "\n" for line in lines).encode("utf-8"), mtime=0)


def decode(name: str, body: bytes) -> list[Entry]:
    """The entries of an object; ArchiveError (naming the object) if it is not a Rearview archive."""
    try:
        entries: list[Entry] = []
        for line in gzip.decompress(body).decode("utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                history = [HistoryEvent.model_validate(e) for e in record.get("history", [])]
                entries.append((Memory.model_validate(record["memory"]), history))
    except (OSError, EOFError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"archive object {name} is not a readable Rearview archive: {exc}") from exc
    return entries
