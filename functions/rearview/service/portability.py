"""Export memories exactly and restore them exactly: every field, every status, the whole history.

The export format is JSON Lines, one memory per line, self-describing and versioned:

    {"format": "rearview-export/1", "memory": {...every `Memory` field...}, "history": [{...}, ...]}

`rearview export` writes it and `rearview import` reads it back (telling it apart from plain
`WriteRequest` lines by its `format`/`memory` keys). A restore goes around the write path: no
dedup, no merge, no new ids or timestamps, so export -> import into an empty store -> export is
byte-identical. It is the way to back up, to move between the local and AWS backends, and to leave.

An export reads the store one listing page at a time while it may still be written to: a memory
changed during the export appears in the state one page read saw (stop writers for a snapshot).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from rearview.errors import EmbedderError, InvalidInputError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus
from rearview.ports import IndexDocument, MemoryStore, StoreWrite
from rearview.service import indexing
from rearview.service.memory_service import MemoryService
from rearview.service.reindex import INDEXED_STATUSES, REINDEX_BATCH

log = logging.getLogger(__name__)

EXPORT_FORMAT: Final = "rearview-export/1"
EXPORT_PAGE = 100
EVERY_STATUS = MemoryFilter(statuses=tuple(MemoryStatus))


class ExportRecord(BaseModel):
    """One line of an export: a stored memory as it is, and its history, oldest event first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["rearview-export/1"] = EXPORT_FORMAT
    memory: Memory
    history: list[HistoryEvent]


def is_export_line(line: dict[str, object]) -> bool:
    """Whether a parsed JSON line claims to be an export record (else it is a `WriteRequest`)."""
    return "format" in line or "memory" in line


def export_tenant(store: MemoryStore, tenant_id: str) -> Iterator[ExportRecord]:
    """Every memory of the tenant that has not expired, whatever its status, newest `updated_at` first."""
    cursor: str | None = None
    while True:
        page = store.list_memories(tenant_id, EVERY_STATUS, cursor=cursor, limit=EXPORT_PAGE)
        for memory in page.items:
            yield ExportRecord(memory=memory, history=store.history(tenant_id, memory.id))
        cursor = page.cursor
        if cursor is None:
            return


class Restorer:
    """Writes export records back into the service's store as they were, and indexes them in batches.

    Call `flush` at the end: the index documents of the last batch wait for it. Indexing is
    best-effort like every write's (an outage is logged and counted; `rearview reindex` repairs).
    """

    def __init__(self, service: MemoryService) -> None:
        self._service = service
        self._pending: list[Memory] = []
        self.unindexed = 0
        """How many restored memories could not be indexed (embedder or index unavailable)."""

    def restore(self, record: ExportRecord, tenant_id: str | None = None) -> Memory:
        """Store the record's memory and history unchanged (moved to `tenant_id` if given).

        InvalidInputError, writing nothing, if a memory with its id already exists in the tenant.
        The memory lands with its first event in one commit and each later event in a commit of
        its own (a store transaction may not put one record twice), so a crash in between leaves
        a memory with part of its history; its id then exists and a re-run reports it.
        """
        memory, history = _moved(record, tenant_id)
        store = self._service.store
        if store.get(memory.tenant_id, memory.id) is not None:
            where = f"already exists in tenant `{memory.tenant_id}`"
            raise InvalidInputError("memory.id", f"memory `{memory.id}` {where}")
        store.commit([StoreWrite(memory, history[0] if history else None, None)])
        for event in history[1:]:
            store.commit([StoreWrite(memory, event, memory.version)])
        if memory.status in INDEXED_STATUSES:
            self._pending.append(memory)
            if len(self._pending) >= REINDEX_BATCH:
                self.flush()
        return memory

    def flush(self) -> None:
        """Index the restored memories that wait for it."""
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            vectors = self._service.embedder.embed_documents([m.content for m in batch])
        except EmbedderError as exc:
            log.warning("embedding failed, restored memories stored unindexed: %s", exc)
            self.unindexed += len(batch)
            return
        docs = [IndexDocument(m, vectors[i]) for i, m in enumerate(batch)]
        if not indexing.upsert(self._service.index, docs):
            self.unindexed += len(batch)


def _moved(record: ExportRecord, tenant_id: str | None) -> tuple[Memory, list[HistoryEvent]]:
    if tenant_id is None or tenant_id == record.memory.tenant_id:
        return record.memory, record.history
    moved = {"tenant_id": tenant_id}
    return record.memory.model_copy(update=moved), [e.model_copy(update=moved) for e in record.history]
