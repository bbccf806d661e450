"""Export memories exactly and restore them exactly: every field, every status, the whole history.

The export format is JSON Lines, one memory per line, self-describing and versioned:

    {"format": "rearview-export/1", "memory": {...every `Memory` field...}, "history": [{...}, ...]}

`rearview export` writes it and `rearview import` reads it back (telling it apart from plain
`WriteRequest` lines by its `format`/`memory` keys). A restore goes around the write path: no
dedup, no merge, no new ids or timestamps, so export -> import into an empty store -> export is
byte-identical. It is the way to back up, to move between the local and AWS backends, and to leave.

A restore trusts nothing in the file: a record passes the limits a write is held to (content,
ids, labels, metadata: `check_restorable`, which the import's pre-check runs too), its history
events all belong to its memory (same tenant, same id, distinct event ids) and its idempotency key
to its agent, before anything is written. A restore cut short (a crash between its commits) is
finished by running the import again.

An export reads the store one listing page at a time while it may still be written to: a memory
changed during the export appears in the state one page read saw (stop writers for a snapshot).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from rearview.errors import EmbedderError, InvalidInputError
from rearview.limits import (
    MAX_CONTENT_CHARS,
    MAX_MEMORY_CUES,
    AgentIdText,
    Confidence,
    ContentText,
    CueText,
    FlatMetadata,
    Importance,
    Labels,
    MemoryId,
    SessionIdText,
    checked,
    text_problem,
)
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus
from rearview.ports import MemoryStore, StoreWrite
from rearview.service import indexing
from rearview.service.indexing import INDEXED_STATUSES
from rearview.service.memory_service import MemoryService
from rearview.service.reindex import REINDEX_BATCH
from rearview.service.write.secrets import screen_all
from rearview.service.write.stored_text import model_texts

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


_SCOPED_KEY = re.compile(r"^(\d+):")
MAX_NOTE_CHARS = 2 * MAX_CONTENT_CHARS
"""A history event's `note` (a merge explains itself with both contents at most)."""


def check_restorable(record: ExportRecord) -> None:
    """InvalidInputError naming the field when `record` is not what the service could have written.

    The memory's fields are held to a write's limits (a 10 MB content or 5,000 tags would cost every
    reindex; a NUL or an ESC would reach every reader); every history event belongs to this memory
    of this tenant, once; an idempotency key scoped to an agent is scoped to this memory's agent.
    """
    m = record.memory
    checked(MemoryId, m.id, "memory.id")
    checked(AgentIdText, m.tenant_id, "memory.tenant_id")
    checked(ContentText, m.content, "memory.content")
    checked(AgentIdText, m.agent_id, "memory.agent_id")
    if m.session_id is not None:
        checked(SessionIdText, m.session_id, "memory.session_id")
    checked(Labels, m.tags, "memory.tags")
    checked(Labels, m.entities, "memory.entities")
    checked(FlatMetadata, m.metadata, "memory.metadata")
    if len(m.cues) > MAX_MEMORY_CUES:
        raise InvalidInputError("memory.cues", f"has {len(m.cues)} items; the limit is {MAX_MEMORY_CUES}")
    for i, cue in enumerate(m.cues):
        checked(CueText, cue.text, f"memory.cues[{i}].text")
        checked(AgentIdText, cue.by, f"memory.cues[{i}].by")
    checked(Importance, m.importance, "memory.importance")
    checked(Confidence, m.confidence, "memory.confidence")
    for i, ref in enumerate(m.derived_from):
        checked(MemoryId, ref, f"memory.derived_from[{i}]")
    if m.superseded_by is not None:
        checked(MemoryId, m.superseded_by, "memory.superseded_by")
    _check_key(m)
    _check_history(m, record.history)


def _check_key(m: Memory) -> None:
    scoped = _SCOPED_KEY.match(m.idempotency_key or "")
    if scoped is None or m.idempotency_key is None:
        return
    agent = m.idempotency_key[scoped.end() : scoped.end() + int(scoped[1])]
    if agent != m.agent_id or m.idempotency_key[scoped.end() + len(agent) :][:1] != ":":
        raise InvalidInputError(
            "memory.idempotency_key", f"is not scoped to its memory's agent `{m.agent_id}`"
        )


def _check_history(m: Memory, history: list[HistoryEvent]) -> None:
    seen: set[str] = set()
    for i, event in enumerate(history):
        where = f"history[{i}]"
        checked(MemoryId, event.id, f"{where}.id")
        if event.id in seen:
            raise InvalidInputError(f"{where}.id", f"event `{event.id}` appears twice in this record")
        seen.add(event.id)
        if (event.tenant_id, event.memory_id) != (m.tenant_id, m.id):
            raise InvalidInputError(
                where, f"belongs to memory `{event.memory_id}` of tenant `{event.tenant_id}`, not this record"
            )
        if event.actor is not None:
            checked(AgentIdText, event.actor, f"{where}.actor")
        problem = event.note and text_problem(event.note, MAX_NOTE_CHARS)
        if problem:
            raise InvalidInputError(f"{where}.note", problem)


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


class Restored(NamedTuple):
    """What `Restorer.restore` did with one record."""

    memory: Memory
    present: bool
    """The record was restored whole already: nothing was written."""


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

    def restore(self, record: ExportRecord, tenant_id: str | None = None) -> Restored:
        """Store the record's memory and history unchanged (moved to `tenant_id` if given).

        A record restored whole already (the same memory, with every event of its history) is left
        as it is: `Restored.present`, nothing written, so importing an export again is a no-op.
        InvalidInputError, writing nothing, if the record fails `check_restorable`, if another
        memory with its id exists in the tenant (other content, version or history), or if its
        idempotency key belongs to another memory.
        The memory lands with its first event in one commit and each later event in a commit of
        its own (a store transaction may not put one record twice); a restore cut short in between
        left this very memory with the first events of this very history, and restoring the
        record again writes the rest.
        """
        check_restorable(record)
        memory, history = _moved(record, tenant_id)
        store = self._service.store
        done = self._restored_part(memory, history)
        if done == len(history) > 0:
            return Restored(memory, present=True)
        screen_all(model_texts(memory, "memory."), self._service.config.secrets)  # before any write
        if done == 0 and memory.idempotency_key is not None:
            holder = store.find_by_idempotency_key(memory.tenant_id, memory.idempotency_key)
            if holder is not None:
                raise InvalidInputError("memory.idempotency_key", f"already belongs to memory `{holder.id}`")
        if done == 0:
            store.commit([StoreWrite(memory, history[0] if history else None, None)])
            done = 1
        for event in history[done:]:
            store.commit([StoreWrite(memory, event, memory.version)])
        if memory.status in INDEXED_STATUSES:
            self._pending.append(memory)
            if len(self._pending) >= REINDEX_BATCH:
                self.flush()
        return Restored(memory, present=False)

    def _restored_part(self, memory: Memory, history: list[HistoryEvent]) -> int:
        """How many of `history`'s events an earlier restore of this record committed.

        0 when the memory is absent; all of them when this record was restored whole already;
        InvalidInputError when another memory with this id exists (other content, version or history).
        """
        store = self._service.store
        stored = store.get(memory.tenant_id, memory.id)
        if stored is None:
            return 0
        have = [e.id for e in store.history(memory.tenant_id, memory.id)]
        started = [e.id for e in history[: len(have)]]
        if stored == memory and have == [e.id for e in history]:
            return len(history)
        if stored == memory and 0 < len(have) < len(history) and have == started:
            log.info(
                "finishing the interrupted restore of %s: %d of %d events", memory.id, len(have), len(history)
            )
            return len(have)
        where = f"already exists in tenant `{memory.tenant_id}` with other content, version or history"
        raise InvalidInputError("memory.id", f"memory `{memory.id}` {where}")

    def flush(self) -> None:
        """Index the restored memories that wait for it."""
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            docs = indexing.index_documents(
                self._service.embedder, batch, query_view=self._service.config.query_view
            )
        except EmbedderError as exc:
            log.warning("embedding failed, restored memories stored unindexed: %s", exc)
            self.unindexed += len(batch)
            return
        if not indexing.upsert(self._service.index, docs):
            self.unindexed += len(batch)


def _moved(record: ExportRecord, tenant_id: str | None) -> tuple[Memory, list[HistoryEvent]]:
    if tenant_id is None or tenant_id == record.memory.tenant_id:
        return record.memory, record.history
    moved = {"tenant_id": tenant_id}
    return record.memory.model_copy(update=moved), [e.model_copy(update=moved) for e in record.history]
