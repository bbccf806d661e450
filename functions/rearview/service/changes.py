"""The changes to stored memories: update, forget (soft or hard) and restore (from the archive or a forget).

`Changes` holds these three operations for `MemoryService`, which delegates to it. Each checks
everything before it writes, commits the record and its history event together, then upkeeps the
index best-effort (`indexing`). Every id is scoped by the caller's tenant and agent (`visibility`);
a credential bound to its agent changes only what that agent wrote (DESIGN.md, authorship).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from rearview.errors import (
    ArchiveError,
    ConflictError,
    EmbedderError,
    InvalidInputError,
    NotFoundError,
    NotPermittedError,
)
from rearview.limits import MAX_FORGET_BATCH, AgentIdText, checked
from rearview.models import (
    DEFAULT_AGENT,
    Cue,
    ForgetRequest,
    ForgetResult,
    HistoryAction,
    Memory,
    MemorySource,
    MemoryStatus,
    MemoryView,
    UpdateRequest,
)
from rearview.ports import (
    MAX_WRITES_PER_COMMIT,
    Archive,
    Embedder,
    IndexDocument,
    MemoryIndex,
    MemoryStore,
    StoreWrite,
)
from rearview.service import indexing, keyword_context
from rearview.service.config import ServiceConfig
from rearview.service.erasure import Erasure
from rearview.service.history import change_event
from rearview.service.lifecycle.archival import (
    ARCHIVABLE_STATUSES,
    RestoreResult,
    archive_refs,
    verified_archive_content,
)
from rearview.service.verification import check_verified_arg
from rearview.service.visibility import load_all_visible, load_visible, scoped
from rearview.service.write.stored_text import model_texts
from rearview.service.write.writer import Writer
from rearview.shared.clock import Clock
from rearview.text import content_hash

log = logging.getLogger(__name__)

UPDATE_ATTEMPTS = 5
"""How many times an update without `expected_version` re-reads and re-applies after losing a race."""


class Changes:
    """`update`, `forget` and `restore`, over the service's collaborators.

    `present` is how the service shows a memory (strength decayed to now). `archive` is where archived
    bodies live: restoring, and hard-forgetting a memory with archived copies, is an `ArchiveError`
    without one. `writer` screens an update's texts as a write's (`Writer.screen_all`).
    """

    def __init__(
        self,
        store: MemoryStore,
        index: MemoryIndex,
        embedder: Embedder,
        clock: Clock,
        config: ServiceConfig,
        archive: Archive | None,
        writer: Writer,
        present: Callable[[Memory], MemoryView],
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.clock = clock
        self.config = config
        self.archive = archive
        self._writer = writer
        self._present = present
        self._erasure = Erasure(store, index, embedder, clock, self._erase_archived, config.query_view)

    def update(self, tenant_id: str, req: UpdateRequest) -> MemoryView:
        """A new version of an active memory; re-embedded and re-indexed when the content changes.

        With `expected_version`, a memory at another version is a ConflictError (no lost update).
        Without it the caller asked for no version, so losing a race to a concurrent change is not
        theirs to handle: the memory is re-read and the change re-applied, up to `UPDATE_ATTEMPTS`
        times (then ConflictError). Another agent's private memory is NotFoundError.

        Authorship (DESIGN.md): a credential bound to an agent (`req.agent_bound`) may update only
        memories that agent wrote (NotPermittedError otherwise: it writes its own memory, with
        `supersedes` for a correction). An unbound credential may update any memory it sees; when it
        changes another agent's text, the memory is attributed to the editor from then on (writer,
        `source` tool, no speaker, no lineage), and `memory_history` keeps who wrote what before.
        """
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            try:
                return self._update_once(tenant_id, req)
            except ConflictError:
                if req.expected_version is not None or attempt == UPDATE_ATTEMPTS:
                    raise
                log.info("update of %s lost a race (attempt %d), re-applying", req.memory_id, attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _update_once(self, tenant_id: str, req: UpdateRequest) -> MemoryView:
        check_verified_arg(req.verified)
        current = load_visible(self.store, tenant_id, req.memory_id, req.agent_id)
        if current.status is not MemoryStatus.ACTIVE:
            field, done = ("verified", "verified") if req.verified else ("memory_id", "updated")
            raise InvalidInputError(
                field, f"memory is {current.status.value}; only active memories can be {done}"
            )
        if req.expected_version is not None and req.expected_version != current.version:
            raise ConflictError(current.id, req.expected_version, current.version)
        if req.agent_bound and current.agent_id != req.agent_id:
            raise NotPermittedError(
                current.id, current.agent_id, "update",
                "write your own memory instead (with `supersedes` to retire this one)",
            )  # fmt: skip
        changes = self._update_changes(tenant_id, current, req)
        content_changed = "content" in changes
        self._writer.screen_all(model_texts(req))  # every text given; a warning is logged: no receipt
        if content_changed and current.agent_id != req.agent_id:  # the current text is the editor's
            changes.update(
                agent_id=req.agent_id,
                source=MemorySource.TOOL,
                speaker=None,
                source_agents=[],
                source_speakers=[],
            )
        now = self.clock.now()
        edit = {"updated_at": now} if changes else {}  # a verification alone is no edit
        if req.verified:
            changes.update(verified_at=now, verified_by=req.agent_id)
        updated = current.model_copy(update={**changes, **edit, "version": current.version + 1})
        doc = self._updated_document(updated, content_changed, "cues" in changes)
        action = HistoryAction.UPDATED if edit else HistoryAction.VERIFIED
        event = change_event(updated, action, current, now, req.agent_id)
        self.store.commit([StoreWrite(updated, event, current.version)])
        # The neighbours' contexts hold this memory's text (and its time decides their links).
        docs = keyword_context.documents_with_context(
            self.store, tenant_id, [doc or IndexDocument(updated, None)]
        )
        if content_changed and doc is None:
            # A stale vector must not answer for the new content; the neighbours still change.
            indexing.delete(self.index, tenant_id, [updated.id])
            docs = docs[1:]
        indexing.upsert(self.index, docs)
        return self._present(updated)

    def _updated_document(
        self, updated: Memory, content_changed: bool, cues_changed: bool
    ) -> IndexDocument | None:
        """What the index gets for an update.

        The whole document re-embedded when the content changed (None if the embedder failed), the
        cues alone when only they did, else the fields alone.
        """
        import numpy as np

        if content_changed:
            return indexing.embed_memory(self.embedder, updated, query_view=self.config.query_view)
        if not cues_changed:
            return IndexDocument(updated, None)
        if not updated.cues:
            return IndexDocument(
                updated, None, cue_vectors=np.zeros((0, self.embedder.dimension), np.float32)
            )
        try:
            cue_vectors = self.embedder.embed_documents([c.text for c in updated.cues])
        except EmbedderError as exc:
            log.warning("embedding the new cues failed; the indexed cues stay until reindex: %s", exc)
            return IndexDocument(updated, None)
        return IndexDocument(updated, None, cue_vectors=cue_vectors)

    def _update_changes(self, tenant_id: str, current: Memory, req: UpdateRequest) -> dict[str, object]:
        changes: dict[str, object] = {}
        if req.cues is not None:
            cues = [Cue(text=t, by=req.agent_id) for t in req.cues]
            if [c.text for c in cues] != [c.text for c in current.cues]:
                changes["cues"] = cues
        if req.content is not None and req.content != current.content:  # new text answers a conflict
            changes.update(content=req.content, content_hash=content_hash(req.content), contested_by=[])
        for name in ("tags", "entities", "metadata"):
            if getattr(req, name) is not None:
                changes[name] = getattr(req, name)
        for name in ("importance", "confidence", "event_time"):
            if getattr(req, name) is not None:
                changes[name] = getattr(req, name)
        if req.ttl_days is not None or req.importance is not None:
            importance = req.importance or current.importance
            changes["expires_at"] = self.config.policy(tenant_id).retention.expires_at(
                current.type, importance, req.ttl_days, self.clock.now()
            )
        if not changes and not req.verified:
            raise InvalidInputError("memory_update", "nothing to change: give at least one field to update")
        return changes

    def forget(self, tenant_id: str, req: ForgetRequest) -> ForgetResult:
        """Soft (status `deleted`, history kept) or hard (store, index and archive purged) deletion.

        By ids (all must exist and be visible to `req.agent_id`, else NotFoundError and nothing
        changes) or by a filter with at least one criterion, scoped to what `req.agent_id` may see
        (archived memories included); a filter forgets at most `MAX_FORGET_BATCH` per call (`more`
        says so). A credential bound to its agent (`req.agent_bound`) forgets only what that agent
        wrote: an id of another agent's memory is NotPermittedError (nothing changes), a filter
        passes over other agents' memories.

        A hard forget reaches every copy (`erasure`): each archive object the memory was ever
        written to, and what was derived from it (a summary of it, a fact extracted from it): made
        again from its other sources, or erased with it while it carries its words, or kept when
        its writer rewrote it in their own words; the receipt lists each. It is resumable: one that
        fails half-way raises, and repeating it finishes it (it never answers not_found while a
        copy is left).
        """
        targets, more = self._forget_targets(tenant_id, req)
        if req.hard:
            receipt = self._erasure.run(tenant_id, targets, req.agent_id)
            return ForgetResult(
                forgotten=[m.id for m in targets], hard=True, more=more,
                derived_erased=receipt.erased, archive_copies_erased=receipt.archive_copies,
                derived_rederived=receipt.rederived, derived_unlinked=receipt.unlinked,
            )  # fmt: skip
        now = self.clock.now()
        writes = []
        for memory in targets:
            after = memory.model_copy(
                update={"status": MemoryStatus.DELETED, "updated_at": now, "version": memory.version + 1}
            )
            writes.append(
                StoreWrite(
                    after,
                    change_event(after, HistoryAction.FORGOTTEN, memory, now, req.agent_id),
                    memory.version,
                )
            )
        for start in range(0, len(writes), MAX_WRITES_PER_COMMIT):  # atomic per chunk only
            self.store.commit(writes[start : start + MAX_WRITES_PER_COMMIT])
        # The document stays, marked deleted: search matches active ones, `as_of` the ones active then.
        indexing.upsert(self.index, [IndexDocument(w.memory, None) for w in writes])
        gone = [w.memory for w in writes]
        indexing.upsert(self.index, keyword_context.neighbour_documents(self.store, tenant_id, gone))
        return ForgetResult(forgotten=[m.id for m in targets], hard=False, more=more)

    def _forget_targets(self, tenant_id: str, req: ForgetRequest) -> tuple[list[Memory], bool]:
        if req.ids:
            found = load_all_visible(self.store, tenant_id, req.ids, req.agent_id, "ids")
            if req.agent_bound:
                for memory in found:
                    if memory.agent_id != req.agent_id:
                        raise NotPermittedError(
                            memory.id, memory.agent_id, "forget", "forget only memories your agent wrote"
                        )
            return [m for m in found if req.hard or m.status is not MemoryStatus.DELETED], False
        flt = req.filter
        if flt is None or not any((flt.session_id, flt.types, flt.tags, flt.time_from, flt.time_to)):
            raise InvalidInputError(
                "filter", "give `ids`, or at least one of session_id, types, tags, time_from, time_to"
            )
        statuses = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.ARCHIVED) + (
            (MemoryStatus.DELETED,) if req.hard else ()
        )
        listing = scoped(flt, req.agent_id).model_copy(update={"statuses": statuses})
        targets: list[Memory] = []
        cursor: str | None = None
        while True:  # a bound agent passes over the others' memories, a page at a time
            page = self.store.list_memories(tenant_id, listing, cursor=cursor, limit=MAX_FORGET_BATCH)
            own = [m for m in page.items if not req.agent_bound or m.agent_id == req.agent_id]
            room = MAX_FORGET_BATCH - len(targets)
            targets.extend(own[:room])
            cursor = page.cursor
            if cursor is None or len(own) > room or len(targets) >= MAX_FORGET_BATCH:
                return targets, cursor is not None or len(own) > room

    def _erase_archived(self, tenant_id: str, memory: Memory) -> int:
        """Erase `memory` from every archive object it was written to; how many."""
        refs = archive_refs(memory, self.store.history(tenant_id, memory.id))
        if refs and self.archive is None:
            raise ArchiveError(f"memory {memory.id} has archived copies but no archive is configured")
        for ref in refs:
            self._require_archive().delete(tenant_id, ref, memory.id)
        return len(refs)

    def restore(
        self, tenant_id: str, memory_id: str, agent_id: str = DEFAULT_AGENT, *, agent_bound: bool = False
    ) -> RestoreResult:
        """Bring an archived memory back from the archive: full content, re-embedded, re-indexed.

        A soft-forgotten memory comes back too (`_undelete`): with the status it had before the
        forget, re-indexed, and a `restored` event; `restored_from` is then `forgotten`.

        Only the text comes from the archive object, and only when it is the text the store's record
        was archived with (its `content_hash`) within a write's limits: every other field (agent,
        visibility, tags, metadata, provenance) is the store's. A tampered or foreign object is an
        ArchiveError naming what is wrong, and nothing changes.

        It returns with the status it had when archived (active or superseded), a fresh retention
        counted from now, its strength reinforced as by a recall, and its history intact (plus a
        `restored` event); the archived copy is then removed. NotFoundError if there is no such
        memory that `agent_id` may see, InvalidInputError if it is not archived, ArchiveError if the
        archive fails (and then nothing changed).

        Authorship (DESIGN.md): a credential bound to its agent (`agent_bound`) undoes the forget only
        of a memory that agent wrote (NotPermittedError otherwise, as `forget` and `update`): another
        agent's retraction is its writer's to undo. An archived memory (the lifecycle archived it, no
        agent retracted it) comes back for any agent that may see it.
        """
        checked(AgentIdText, agent_id, "agent_id")
        stub = load_visible(self.store, tenant_id, memory_id, agent_id)
        if stub.status is MemoryStatus.DELETED:
            if agent_bound and stub.agent_id != agent_id:
                raise NotPermittedError(
                    stub.id, stub.agent_id, "restore", "write your own memory instead if it still holds"
                )
            return self._undelete(tenant_id, stub, agent_id)
        if stub.status is not MemoryStatus.ARCHIVED or stub.archive_ref is None:
            raise InvalidInputError(
                "memory_id",
                f"memory is {stub.status.value}; only archived or soft-forgotten memories can be restored",
            )
        ref = stub.archive_ref
        try:
            full, _ = self._require_archive().get(tenant_id, ref, stub.id)
        except NotFoundError as exc:  # the memory exists: it is its archived copy that is missing
            raise ArchiveError(f"archived copy of {stub.id} is missing from {ref}: cannot restore") from exc
        content = verified_archive_content(stub, full, ref)
        now = self.clock.now()
        restored = stub.model_copy(  # the store's record, with the archived body that matches it
            update={
                "content": content,
                "status": full.status if full.status in ARCHIVABLE_STATUSES else MemoryStatus.ACTIVE,
                "archive_ref": None,
                "version": stub.version + 1,
                "updated_at": now,
                "last_accessed_at": now,
                "strength": self.config.reinforcement.reinforced(
                    stub.strength, self.config.reinforcement.recall_boost
                ),
                "expires_at": self.config.policy(tenant_id).retention.expires_at(
                    stub.type, stub.importance, None, now
                ),
            }
        )
        event = change_event(
            restored, HistoryAction.RESTORED, stub, now, agent_id, note=f"restored from {ref}"
        )
        self.store.commit([StoreWrite(restored, event, stub.version)])
        doc = indexing.embed_memory(self.embedder, restored, query_view=self.config.query_view)
        indexed = doc is not None and indexing.upsert(
            self.index, keyword_context.documents_with_context(self.store, tenant_id, [doc])
        )
        try:
            self._require_archive().delete(tenant_id, ref, stub.id)
        except ArchiveError as exc:  # the copy stays findable through history: a hard forget erases it
            log.warning("restored %s but could not remove its archived copy: %s", stub.id, exc)
        return RestoreResult(memory=self._present(restored), restored_from=ref, indexed=indexed)

    def _undelete(self, tenant_id: str, memory: Memory, agent_id: str) -> RestoreResult:
        """Undo a soft forget: the status before it (from history, else active), a new version, re-indexed."""
        forgotten = [
            e for e in self.store.history(tenant_id, memory.id) if e.action is HistoryAction.FORGOTTEN
        ]
        previous = (forgotten[-1].before or {}).get("status") if forgotten else None
        status = MemoryStatus(previous) if previous in ARCHIVABLE_STATUSES else MemoryStatus.ACTIVE
        now = self.clock.now()
        restored = memory.model_copy(
            update={"status": status, "version": memory.version + 1, "updated_at": now}
        )
        event = change_event(
            restored, HistoryAction.RESTORED, memory, now, agent_id, note="restored from forgotten"
        )
        self.store.commit([StoreWrite(restored, event, memory.version)])
        doc = indexing.embed_memory(self.embedder, restored, query_view=self.config.query_view)
        indexed = doc is not None and indexing.upsert(
            self.index, keyword_context.documents_with_context(self.store, tenant_id, [doc])
        )
        return RestoreResult(memory=self._present(restored), restored_from="forgotten", indexed=indexed)

    def _require_archive(self) -> Archive:
        if self.archive is None:
            raise ArchiveError("no archive is configured (settings.archive)")
        return self.archive
