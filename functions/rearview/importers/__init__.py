"""Importers: move in from another memory system (`rearview import --from SOURCE FILE_OR_DIR`).

One module per source reads its export into records (`records.py`); `run.ImportRunner` writes
them through the service's write path, once across runs, and reports what each did. Each module's
docstring states the export shape it reads (and which package version and file it comes from) and
how each field maps.

    mem0        Memory.get_all() records (JSON, JSON Lines)
    openmemory  OpenMemory's memories export (memories.json / memories.jsonl)
    graphiti    Graphiti EntityEdge / EpisodicNode dumps; `zep` reads the same facts, as the same records
    letta       a Letta agent file (.af) and archival passages
    mempalace   the folder `mempalace export` writes
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from rearview.errors import InvalidInputError
from rearview.importers import graphiti, letta, mem0, mempalace, openmemory
from rearview.importers.records import Record
from rearview.importers.run import ImportReport, ImportRunner

__all__ = ["SOURCES", "ImportReport", "ImportRunner", "read_source"]

Reader = Callable[[Path], Iterator[Record]]
SOURCES: dict[str, Reader] = {
    "mem0": mem0.read,
    "openmemory": openmemory.read,
    "zep": graphiti.read,
    "graphiti": graphiti.read,
    "letta": letta.read,
    "mempalace": mempalace.read,
}


def read_source(source: str, path: Path) -> Iterator[Record]:
    """The records of `path` read as an export of `source`; InvalidInputError for an unknown source."""
    reader = SOURCES.get(source)
    if reader is None:
        raise InvalidInputError("--from", f"unknown source {source!r}", allowed=sorted(SOURCES))
    return reader(path)
