"""`handle_expired`: what happens to a memory the store's TTL removed (a DynamoDB stream REMOVE).

`sweep_expired` does the same for a store that never deletes on its own (SQLite, in-memory): the
archive job hands it every record that expired while no job ran (the timer off, the server down
longer than the look-ahead), so an expired memory is always archived (restorable, forgettable)
or, when it was soft-forgotten, erased, text included.

The old image and the history still in the store go to the archive; a stub (status
`archived`, pointing at the archive object) takes the memory's place, so `memory_restore` and
`include_archived` find it; the index document is dropped. A repeated record finds the stub
and only re-drops the index document. Soft-deleted memories are not archived.
"""

from __future__ import annotations

from rearview.errors import InvalidInputError
from rearview.models import Memory, MemoryStatus
from rearview.service import indexing
from rearview.service.lifecycle.archival import ARCHIVABLE_STATUSES
from rearview.service.lifecycle.archiving import commit_stub
from rearview.service.lifecycle.context import JobContext
from rearview.service.lifecycle.reports import ExpiryReport
from rearview.shared.clock import to_iso


def archive_expired(ctx: JobContext, old_image: Memory) -> ExpiryReport:
    """Archive `old_image`, a memory of `ctx.tenant_id` that the TTL removed; idempotent."""
    tenant_id, store = ctx.tenant_id, ctx.service.store
    if old_image.tenant_id != tenant_id:
        raise InvalidInputError("old_image", f"belongs to tenant {old_image.tenant_id!r}, not {tenant_id!r}")
    memory_id = old_image.id
    report = ExpiryReport(tenant_id=tenant_id, memory_id=memory_id, action="ignored", reason="")
    current = store.get(tenant_id, memory_id)
    if current is not None:
        return _already(ctx, report, current)
    indexing.delete(ctx.service.index, tenant_id, [memory_id])
    if old_image.status not in ARCHIVABLE_STATUSES:
        return report.model_copy(update={"reason": f"status {old_image.status.value}: nothing to keep"})
    now = ctx.now()
    reason = f"expired (TTL) at {to_iso(old_image.expires_at or now)}"
    ref = ctx.archive.put(tenant_id, [(old_image, store.history(tenant_id, memory_id))])
    landed = commit_stub(ctx, old_image, ref, reason, now, None)
    if not landed:  # the expired record may still be physically there, at its last version
        landed = commit_stub(ctx, old_image, ref, reason, now, old_image.version)
    if not landed:
        ctx.archive.delete(tenant_id, ref, memory_id)
        current = store.get(tenant_id, memory_id)
        if current is not None:
            return _already(ctx, report, current)
        return report.model_copy(update={"reason": "the store changed it concurrently"})
    return report.model_copy(update={"action": "archived", "archive_ref": ref, "reason": reason})


SWEEP_LIMIT = 500
"""Expired records one archive run handles; the rest are the next run's."""


def sweep_expired(ctx: JobContext, limit: int = SWEEP_LIMIT) -> tuple[int, int]:
    """Archive the expired records the store still holds, erase soft-forgotten ones: (archived, erased)."""
    archived = erased = 0
    for memory in ctx.service.store.list_expired(ctx.tenant_id, limit):
        if memory.status in ARCHIVABLE_STATUSES:
            archived += archive_expired(ctx, memory).action == "archived"
            continue
        ctx.service.store.purge(ctx.tenant_id, memory.id)
        indexing.delete(ctx.service.index, ctx.tenant_id, [memory.id], erase=True)
        erased += 1
    return archived, erased


def _already(ctx: JobContext, report: ExpiryReport, current: Memory) -> ExpiryReport:
    """A repeated (or overtaken) expiry: the stub exists, or the memory lives again (left alone)."""
    if current.status is not MemoryStatus.ARCHIVED:
        reason = f"memory is {current.status.value} again (v{current.version})"
        return report.model_copy(update={"reason": reason})
    indexing.delete(ctx.service.index, report.tenant_id, [report.memory_id])
    update = {"action": "already_archived", "archive_ref": current.archive_ref, "reason": "stub exists"}
    return report.model_copy(update=update)
