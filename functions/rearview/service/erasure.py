"""Hard forget as a resumable job: every copy of the words erased, nobody else's text with them.

`Erasure.run` erases memories from the store, the index and the archive, and follows their words
into what was derived from them (found by the store's lineage, `MemoryStore.derived_ids`, however
old or busy their session). A derived memory that still carries an erased memory's words
(`lineage.still_carries`) is made again from its other sources when the service made it offline
(an extractive summary), else erased with it (and what was derived from it in turn). One that no
longer carries them (its writer rewrote it in their own words) survives: its lineage to the
erased memory is dropped and its history keeps no earlier text. Another agent's own text is never
erased.

Resumable: the erased memories are first kept as tombstones (status `deleted`, so nothing finds
them), every step after that is idempotent, and their records are purged last. A run that fails
half-way (a busy reader, an index outage) raises, and the same hard forget, repeated, finds the
tombstones and finishes; it never answers `not_found` while a copy is left.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

from rearview.errors import ConflictError, EmbedderError
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryFilter, MemorySource, MemoryStatus
from rearview.ports import (
    MAX_WRITES_PER_COMMIT,
    Embedder,
    IndexDocument,
    MemoryIndex,
    MemoryStore,
    StoreWrite,
)
from rearview.service import indexing, keyword_context
from rearview.service.history import change_event
from rearview.service.lineage import (
    ERASURE_ACTOR,
    lineage_fields,
    redacted_history,
    redacted_snapshot,
    rederivable,
    still_carries,
)
from rearview.service.write.consolidation import Consolidator
from rearview.shared.clock import Clock
from rearview.text import content_hash

log = logging.getLogger(__name__)

LEGACY_SCAN_LIMIT = 500
"""Memories of an erased one's session (or instant) read for facts extracted from it before the
store recorded lineage (`derived_ids`; the SQLite store backfilled it): a fallback, not the way."""
PENDING_NOTE = "hard forget in progress: erased when it completes"


@dataclass
class ErasureReceipt:
    """What one erasure touched, beyond the memories it was asked to erase."""

    erased: list[str] = field(default_factory=list)
    """Derived memories that carried the erased words and were erased with them."""
    rederived: list[str] = field(default_factory=list)
    """Summaries made again, offline, from their other sources."""
    unlinked: list[str] = field(default_factory=list)
    """Derived memories that no longer carried the erased words: kept, their lineage to them dropped."""
    archive_copies: int = 0


class Erasure:
    """One tenant's hard forget: `run` erases `targets` and follows their words (module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        index: MemoryIndex,
        embedder: Embedder,
        clock: Clock,
        erase_archived: Callable[[str, Memory], int],
        query_view: float = 0.0,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.erase_archived = erase_archived
        self.query_view = query_view

    def run(self, tenant_id: str, targets: Sequence[Memory], actor: str) -> ErasureReceipt:
        """Erase `targets` (memories the caller may erase) and their words everywhere; the receipt.

        Raises what a backend raises (StoreError, IndexUnavailableError, ArchiveError): the targets
        are then tombstones, and running it again with them finishes the job.
        """
        if not targets:
            return ErasureReceipt()
        now = self.clock.now()
        tombstones = self._tombstones(tenant_id, targets, now, actor, PENDING_NOTE)
        receipt = self._recorded(tenant_id, tombstones)  # what an interrupted run did already
        erased = {m.id: m for m in tombstones}
        seen_missing: set[str] = set()
        queue = list(tombstones)
        while queue:
            source = queue.pop(0)
            for derived_id in self._derived_ids(tenant_id, source):
                if derived_id in erased:
                    continue
                derived = self.store.get(tenant_id, derived_id)
                if derived is None:
                    seen_missing.add(derived_id)  # purged by an earlier, interrupted run: its index copy
                    continue
                dropped = self._settle(tenant_id, derived, erased, receipt, now)
                if dropped is not None:
                    erased[dropped.id] = dropped
                    queue.append(dropped)
                    _add(receipt.erased, dropped.id)
                self._record(tenant_id, tombstones[0], receipt)
        summaries = [m for m in erased.values() if m.source is MemorySource.SUMMARY]
        self._unlink_consolidated(tenant_id, summaries, set(erased), now, actor)
        for memory in erased.values():
            receipt.archive_copies += self.erase_archived(tenant_id, memory)
        self._record(tenant_id, tombstones[0], receipt)
        # The neighbours' contexts lose the erased words before the index erases (and compacts) it.
        indexing.upsert(
            self.index, keyword_context.neighbour_documents(self.store, tenant_id, list(erased.values()))
        )
        self.index.erase(tenant_id, [*erased, *sorted(seen_missing)])
        target_ids = {m.id for m in tombstones}
        for memory_id in [*(i for i in erased if i not in target_ids), *target_ids]:
            self.store.purge(tenant_id, memory_id)  # the targets' tombstones last: a retry starts there
        return receipt

    # ------------------------------------------------------------------ progress

    def _record(self, tenant_id: str, tombstone: Memory, receipt: ErasureReceipt) -> None:
        """Write what the job touched so far into the tombstone's pending event (for a retry's receipt)."""
        events = [e for e in self.store.history(tenant_id, tombstone.id) if _pending(e)]
        if events:
            note = f"{PENDING_NOTE}; touched {json.dumps(asdict(receipt), sort_keys=True)}"
            self.store.rewrite_history(
                tenant_id, tombstone.id, [events[-1].model_copy(update={"note": note})]
            )

    def _recorded(self, tenant_id: str, tombstones: Sequence[Memory]) -> ErasureReceipt:
        """What interrupted runs recorded in these tombstones, merged (an empty receipt if none)."""
        receipt = ErasureReceipt()
        for tombstone in tombstones:
            for event in self.store.history(tenant_id, tombstone.id):
                note = event.note or ""
                if not _pending(event) or "; touched " not in note:
                    continue
                done = json.loads(note.split("; touched ", 1)[1])
                for name in ("erased", "rederived", "unlinked"):
                    for memory_id in done.get(name, []):
                        _add(getattr(receipt, name), str(memory_id))
                receipt.archive_copies = max(receipt.archive_copies, int(done.get("archive_copies", 0)))
        return receipt

    # ------------------------------------------------------------------ finding

    def _derived_ids(self, tenant_id: str, source: Memory) -> list[str]:
        """Every memory derived from `source`: its lineage, its summary, and pre-lineage facts."""
        found = dict.fromkeys(self.store.derived_ids(tenant_id, source.id))
        if source.consolidated_into:
            found[source.consolidated_into] = None
        if source.source is not MemorySource.SUMMARY:
            nearby = MemoryFilter(
                session_id=source.session_id,
                time_from=None if source.session_id else source.event_time,
                time_to=None if source.session_id else source.event_time,
                statuses=tuple(MemoryStatus),
            )
            page = self.store.list_memories(tenant_id, nearby, limit=LEGACY_SCAN_LIMIT)
            found.update(dict.fromkeys(m.id for m in page.items if source.id in m.derived_from))
        found.pop(source.id, None)
        return list(found)

    # ------------------------------------------------------------------ settling a derived memory

    def _settle(
        self,
        tenant_id: str,
        derived: Memory,
        erased: dict[str, Memory],
        receipt: ErasureReceipt,
        now: datetime,
    ) -> Memory | None:
        """Re-derive, unlink or drop `derived`; the tombstone to erase when dropped, else None."""
        gone = [erased[i] for i in derived.derived_from if i in erased]
        if not gone:
            return None  # settled by an earlier run, or it never named them
        history = self.store.history(tenant_id, derived.id)
        if derived.status is MemoryStatus.DELETED and any(e.note == DROP_NOTE for e in history):
            return derived  # dropped by an interrupted run
        remaining = self.store.get_many(tenant_id, [i for i in derived.derived_from if i not in erased])
        if not still_carries(derived, history, gone):  # its text is its writer's own: it stays
            self._relink(tenant_id, derived, derived.content, remaining, now, "unlinked")
            _add(receipt.unlinked, derived.id)
            return None
        live = [m for m in remaining if m.status is not MemoryStatus.DELETED]
        if live and rederivable(derived, history):
            self._relink(tenant_id, derived, self._rederived_text(derived, live), live, now, "re-derived")
            _add(receipt.rederived, derived.id)
            return None
        return self._tombstones(tenant_id, [derived], now, ERASURE_ACTOR, DROP_NOTE)[0]

    def _rederived_text(self, derived: Memory, sources: Sequence[Memory]) -> str:
        """The extractive summary of `sources`, as `MemoryService.summarize` makes it."""
        import numpy as np

        try:
            vectors = self.embedder.embed_documents([m.content for m in sources])
        except EmbedderError:
            vectors = np.ones((len(sources), 1), dtype=np.float32)
        label = f"session {derived.session_id}" if derived.session_id else "time range"
        return Consolidator().summarize(sources, vectors, label).content

    def _relink(
        self,
        tenant_id: str,
        derived: Memory,
        content: str,
        sources: Sequence[Memory],
        now: datetime,
        how: str,
    ) -> None:
        """Commit `derived` with `content`, derived from `sources` only; its history without older text."""
        events = self.store.history(tenant_id, derived.id)
        self.store.rewrite_history(tenant_id, derived.id, redacted_history(events, content))
        after = derived.model_copy(
            update={
                **lineage_fields(sources),
                "content": content,
                "content_hash": content_hash(content),
                "version": derived.version + 1,
                "updated_at": now,
            }
        )
        event = change_event(
            after, HistoryAction.UPDATED, derived, now, ERASURE_ACTOR, f"{how}: a source was erased"
        )
        event = event.model_copy(update={"before": redacted_snapshot(event.before, content)})
        self.store.commit([StoreWrite(after, event, derived.version)])
        doc = (
            indexing.embed_memory(self.embedder, after, query_view=self.query_view)
            if content != derived.content
            else None
        )
        indexing.upsert(
            self.index,
            keyword_context.documents_with_context(
                self.store, tenant_id, [doc or IndexDocument(after, None)]
            ),
        )

    # ------------------------------------------------------------------ tombstones and links

    def _tombstones(
        self, tenant_id: str, memories: Sequence[Memory], now: datetime, actor: str, note: str
    ) -> list[Memory]:
        """`memories` as tombstones (status `deleted`, found by nothing but a retry), committed."""
        out: list[Memory] = []
        writes: list[StoreWrite] = []
        for memory in memories:
            if memory.status is MemoryStatus.DELETED and (
                note != PENDING_NOTE or any(_pending(e) for e in self.store.history(tenant_id, memory.id))
            ):
                out.append(memory)  # a tombstone already (a soft-forgotten target gets one: its progress)
                continue
            after = memory.model_copy(
                update={"status": MemoryStatus.DELETED, "updated_at": now, "version": memory.version + 1}
            )
            event = change_event(after, HistoryAction.FORGOTTEN, memory, now, actor, note)
            writes.append(StoreWrite(after, event, memory.version))
            out.append(after)
        for start in range(0, len(writes), MAX_WRITES_PER_COMMIT):
            self.store.commit(writes[start : start + MAX_WRITES_PER_COMMIT])
        return out

    def _unlink_consolidated(
        self, tenant_id: str, summaries: Sequence[Memory], erased: set[str], now: datetime, actor: str
    ) -> None:
        """The surviving sources of an erased summary rank on their own again (no `consolidated_into`)."""
        for summary in summaries:
            for source_id in summary.derived_from:
                source = self.store.get(tenant_id, source_id)
                if source is None or source.id in erased or source.consolidated_into != summary.id:
                    continue
                after = source.model_copy(
                    update={"consolidated_into": None, "updated_at": now, "version": source.version + 1}
                )
                note = f"summary {summary.id} erased"
                try:
                    event = change_event(after, HistoryAction.UPDATED, source, now, actor, note=note)
                    self.store.commit([StoreWrite(after, event, source.version)])
                except ConflictError:
                    log.info("source %s of erased summary changed meanwhile: left linked", source_id)


DROP_NOTE = "erased with a memory it was derived from"


def _pending(event: HistoryEvent) -> bool:
    return event.action is HistoryAction.FORGOTTEN and (event.note or "").startswith(PENDING_NOTE)


def _add(ids: list[str], memory_id: str) -> None:
    if memory_id not in ids:
        ids.append(memory_id)
