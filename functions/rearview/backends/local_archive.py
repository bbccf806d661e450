"""DirectoryArchive: the embedded backend's `Archive`, the S3 layout on a local directory.

Layout: `<root>/tenant=<tenant>/date=<YYYY-MM-DD>/<ulid>.jsonl.gz` (the tenant URL-quoted, the
date the batch was archived, UTC); the reference is that path relative to `root`. Each line of
the gzip JSON Lines object is one archived memory, `{"v": 1, "memory": {...}, "history": [...]}`
(the pydantic JSON of `Memory` and its `HistoryEvent`s, oldest first) — the format of
`S3Archive`, so a directory can be synced to the bucket (`aws s3 sync <root> s3://…/archive/`)
and read there.

Writes are atomic (a temporary file renamed over the target): an object is either whole or
absent. A delete rewrites the object without the memory, or removes it once empty.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from rearview.backends.archive_format import (
    FORMAT_VERSION,
    SUFFIX,
    Entry,
    checked_entry,
    decode,
    encode,
    object_name,
    tenant_prefix,
)
from rearview.errors import ArchiveError, InvalidInputError, NotFoundError
from rearview.models import HistoryEvent, Memory
from rearview.shared.clock import Clock, SystemClock

__all__ = ["FORMAT_VERSION", "DirectoryArchive"]


class DirectoryArchive:
    """An `Archive` in a local directory. The constructor does no I/O (folders appear on first put).

    Raises only `rearview.errors` types: `NotFoundError` when the memory is not in the referenced
    object (or the reference is another tenant's), `InvalidInputError` for an empty batch or one
    holding another tenant's memory, `ArchiveError` when the file system refuses.
    """

    def __init__(self, root: str | Path, *, clock: Clock | None = None) -> None:
        self._root = Path(root)
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        return self._root

    def tenant_prefix(self, tenant_id: str) -> str:
        """The reference prefix of every archived object of the tenant."""
        return tenant_prefix(tenant_id)

    def put(self, tenant_id: str, items: Sequence[tuple[Memory, Sequence[HistoryEvent]]]) -> str:
        """Write the batch as one new object and return its reference (all of it lands, or none)."""
        if not items:
            raise InvalidInputError("items", "must hold at least one memory to archive")
        entries = [checked_entry(tenant_id, memory, history) for memory, history in items]
        now = self._clock.now()
        ref = object_name(tenant_id, now)
        self._write(self._path(ref), entries)
        return ref

    def get(self, tenant_id: str, ref: str, memory_id: str) -> tuple[Memory, list[HistoryEvent]]:
        """The archived memory and its history, as they were put (`NotFoundError` if absent)."""
        if not self._owns(tenant_id, ref):
            raise NotFoundError(memory_id)
        for memory, history in self._read(self._path(ref)) or []:
            if memory.id == memory_id:
                return memory, history
        raise NotFoundError(memory_id)

    def delete(self, tenant_id: str, ref: str, memory_id: str) -> None:
        """Remove the memory from its object (the object too, once empty). Idempotent."""
        if not self._owns(tenant_id, ref):
            return
        path = self._path(ref)
        with self._lock:
            entries = self._read(path)
            if entries is None:
                return
            remaining = [e for e in entries if e[0].id != memory_id]
            if len(remaining) == len(entries):
                return
            if remaining:
                self._write(path, remaining)
                return
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise ArchiveError(f"cannot delete archive object {path}: {exc}") from exc

    def iter_refs(self, tenant_id: str) -> Iterator[str]:
        """Every object of the tenant, oldest date first."""
        base = self._root / self.tenant_prefix(tenant_id)
        if not base.is_dir():
            return
        for path in sorted(base.glob(f"date=*/*{SUFFIX}")):
            yield path.relative_to(self._root).as_posix()

    # ------------------------------------------------------------------ files

    def _owns(self, tenant_id: str, ref: str) -> bool:
        parts = ref.split("/")
        return ref.startswith(self.tenant_prefix(tenant_id)) and ".." not in parts and "" not in parts

    def _path(self, ref: str) -> Path:
        return self._root.joinpath(*ref.split("/"))

    def _read(self, path: Path) -> list[Entry] | None:
        try:
            body = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ArchiveError(f"cannot read archive object {path}: {exc}") from exc
        return decode(str(path), body)

    def _write(self, path: Path, entries: Sequence[Entry]) -> None:
        body = encode(entries)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise ArchiveError(f"cannot write archive object {path}: {exc}") from exc
