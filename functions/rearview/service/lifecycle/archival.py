"""What an archived memory looks like in the hot store, and how it comes back.

Archiving moves a memory's *body* to the `Archive` (the full record and its history, as one
line of a batch object) and leaves a **stub** in the store:

- the same record with `status = archived`, `archive_ref` naming the archive object, no
  `expires_at` (a stub lives until it is restored or hard-forgotten), `updated_at` unchanged
  (archiving is housekeeping, not a change of what is remembered), and `content` cut to a
  preview of at most `PREVIEW_CHARS` characters; `content_hash` still identifies the full body;
- its history stays in the store (so `memory_history` still answers for it), with one
  `archived` event whose `after` names the archive object.

Why a preview and not the whole content: the body's home is the archive (DynamoDB items are
projected into every GSI, so each byte kept is paid several times), while `memory_search` with
`include_archived` only needs enough text to recognise the memory; tags, entities and
metadata are kept whole. `memory_restore` brings the full record back from the archive.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from rearview.errors import ArchiveError, InvalidInputError
from rearview.limits import ContentText, checked
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryStatus, MemoryView
from rearview.service.history import history_event
from rearview.text import content_hash

PREVIEW_CHARS = 280
ARCHIVABLE_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)


class RestoreResult(BaseModel):
    """Output of `memory_restore`: the memory as it is again, and whether it is searchable yet."""

    model_config = ConfigDict(defer_build=True)

    memory: MemoryView
    restored_from: str
    """The archive reference the memory was read from."""
    indexed: bool = True
    """False when the embedder or index failed: the memory is restored, `rearview reindex` repairs."""


def preview(content: str, limit: int = PREVIEW_CHARS) -> str:
    """`content` if short enough, else its first words within `limit` characters followed by `…`."""
    text = content.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def archived_stub(memory: Memory, ref: str) -> Memory:
    """The store's record of `memory` once its body is in the archive object `ref`."""
    return memory.model_copy(
        update={
            "status": MemoryStatus.ARCHIVED,
            "archive_ref": ref,
            "content": preview(memory.content),
            "expires_at": None,
            "version": memory.version + 1,
        }
    )


def archived_event(
    memory: Memory, ref: str, reason: str, now: datetime, actor: str = "lifecycle"
) -> HistoryEvent:
    """The history event that explains an archival (small: the body is in the archive, not here)."""
    return history_event(
        memory,
        HistoryAction.ARCHIVED,
        now,
        actor=actor,
        before={"status": memory.status.value, "version": memory.version, "strength": memory.strength},
        after={"status": MemoryStatus.ARCHIVED.value, "archive_ref": ref},
        note=reason,
    )


def archive_refs(memory: Memory | None, history: Sequence[HistoryEvent]) -> list[str]:
    """Every archive object this memory was ever written to (a hard forget erases it from all)."""
    refs: list[str] = [memory.archive_ref] if memory is not None and memory.archive_ref else []
    refs += [str(e.after["archive_ref"]) for e in history if e.after and e.after.get("archive_ref")]
    return list(dict.fromkeys(refs))


def verified_archive_content(stub: Memory, archived: Memory, ref: str) -> str:
    """The text of `archived` if it is the body `stub` (the store's record) was archived with.

    ArchiveError, saying what is wrong, when the object holds another memory or tenant, or a text
    that is not the archived one (its hash differs from the record's `content_hash`) or breaks a
    write's limits.
    """
    if (archived.tenant_id, archived.id) != (stub.tenant_id, stub.id):
        raise ArchiveError(f"archive object {ref} holds another memory, not {stub.id}: refused")
    try:
        checked(ContentText, archived.content, "content")
    except InvalidInputError as exc:
        raise ArchiveError(
            f"archived copy of {stub.id} in {ref} is not a valid memory ({exc}): refused"
        ) from exc
    if content_hash(archived.content) != stub.content_hash:
        raise ArchiveError(f"archived copy of {stub.id} in {ref} is not the text that was archived: refused")
    return archived.content
