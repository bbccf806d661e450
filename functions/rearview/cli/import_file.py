"""`rearview import`: read a JSON Lines file (or one JSON array) and apply each line to the service.

A line is either a `WriteRequest` (written through the normal write path: dedup, merge, new id)
or an export record (`service/portability.py`: restored exactly, same id, versions and history).
A file that is one JSON array of those is read item by item, numbered like lines (parsed whole, so
up to `MAX_ARRAY_BYTES`).

The file is streamed, one line at a time, never held whole: the default run reads it twice (check
every line, then apply), `--continue-on-error` once. A line is read as bytes and decoded on its
own, so a byte that is not UTF-8 is that line's problem, not a crash of the whole import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rearview.errors import BackendError, InvalidInputError, RearviewError
from rearview.importers.detect import refuse_export
from rearview.models import MemorySource, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.portability import ExportRecord, Restorer, check_restorable, is_export_line

Line = WriteRequest | ExportRecord
Problem = tuple[int, str]
"""A line number (1-based) and why the line was not imported."""

MAX_LINE_BYTES = 32 * 1024 * 1024
"""Longest line read: an export record with a long history fits many times over; a 1 GB line does not."""
MAX_ARRAY_BYTES = 256 * 1024 * 1024
"""Largest file read as one JSON array (it is parsed whole); JSON Lines have no such limit."""
TOO_DEEP = "nested too deep to read as JSON"
"""Why a line (or an array) nested past what Python's parser recurses through is not read."""
WRITE_FIELDS = frozenset(WriteRequest.model_fields)
MESSAGE_KEYS = frozenset({"role", "speaker", "name"})
"""Keys that make a line a chat message (what `rearview ingest` reads), never a memory."""


def lines(path: Path, advance: Callable[[int], object] = lambda _n: None) -> Iterator[tuple[int, Line | str]]:
    """Each non-blank line's number and its parsed form, or why it does not parse; `advance(bytes)` per line.

    InvalidInputError naming the file when it is a conversation rather than memories (checked on
    its first line, before anything else is read). A file that starts with `[` is one JSON array:
    each item is a "line", numbered from 1.
    """
    if _first_byte(path) == b"[":
        yield from _array_items(path, advance)
        return
    with path.open("rb") as fh:
        number = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            number += 1
            advance(len(raw))
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                yield number, f"longer than {MAX_LINE_BYTES} bytes"
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = fh.readline(MAX_LINE_BYTES)
                    advance(len(raw))
                continue
            if not raw.strip():
                continue
            yield number, _parsed(path, number, raw)


def _parsed(path: Path, number: int, raw: bytes) -> Line | str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if number == 1 and text.strip() in {"{", "["}:
            _check_document(path)
            _refuse_conversation(path, "it is one JSON document, not JSON Lines")
        return f"not JSON ({exc.msg})"
    except RecursionError:
        return TOO_DEEP
    if number == 1:
        _check_kind(path, data)
    try:
        return parse_line(data)
    except (ValueError, InvalidInputError) as exc:  # a WriteRequest refuses as the service would
        return _reason(exc)


def _first_byte(path: Path) -> bytes:
    """The file's first byte that is not whitespace (b"" for a blank file)."""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 16):
            if stripped := chunk.lstrip():
                return stripped[:1]
    return b""


def _array_items(path: Path, advance: Callable[[int], object]) -> Iterator[tuple[int, Line | str]]:
    """Each item of a file that is one JSON array, numbered from 1, parsed as a line is."""
    size = path.stat().st_size
    if size > MAX_ARRAY_BYTES:
        raise InvalidInputError(
            str(path),
            f"is a JSON array of {size} bytes, over the {MAX_ARRAY_BYTES} read whole: convert it to "
            f"JSON Lines first (jq -c '.[]' {path} > memories.jsonl)",
        )
    raw = path.read_bytes()
    advance(len(raw))
    try:
        items = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        why = (
            exc.msg
            if isinstance(exc, json.JSONDecodeError)
            else ("not UTF-8" if isinstance(exc, UnicodeDecodeError) else TOO_DEEP)
        )
        raise InvalidInputError(
            str(path),
            f"starts with `[` but is not one JSON array ({why}): expected a JSON array of memories "
            "(WriteRequest objects or export records), or JSON Lines with one per line",
        ) from None
    for number, item in enumerate(items, start=1):
        if number == 1:
            _check_kind(path, item, "item")
        try:
            yield number, parse_line(item)
        except (ValueError, InvalidInputError) as exc:
            yield number, _reason(exc)


def _check_document(path: Path) -> None:
    """InvalidInputError naming `--from SOURCE` when the file, read whole, is another system's export."""
    if path.stat().st_size > MAX_ARRAY_BYTES:
        return
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return
    _check_kind(path, data, "document")


def _check_kind(path: Path, data: Any, unit: str = "line") -> None:
    """InvalidInputError when the first line (or array item) is not a memory.

    Another system's export names `--from SOURCE`; a conversation (transcript, message) names ingest.
    """
    refuse_export(str(path), data, path)
    if isinstance(data, list):
        _refuse_conversation(path, f"its first {unit} is a JSON array")
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        _refuse_conversation(path, "it holds a `messages` list")
    if isinstance(data, dict) and not is_export_line(data) and MESSAGE_KEYS & data.keys():
        key = sorted(MESSAGE_KEYS & data.keys())[0]
        _refuse_conversation(path, f"its first {unit} is a message (`{key}`)")


def _refuse_conversation(path: Path, why: str) -> None:
    raise InvalidInputError(
        str(path), f"this is a conversation, not memories ({why}): use `rearview ingest {path}`"
    )


def parse_line(data: Any) -> Line:
    """One parsed JSON line as a WriteRequest or an export record (else ValueError, InvalidInputError).

    A WriteRequest is valid by construction, so this pre-check is exactly the service's validation.
    """
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if is_export_line(data):
        memory = data.get("memory")
        if isinstance(memory, dict):  # an export from before provenance was kept: it came in by import
            memory.setdefault("source", MemorySource.IMPORT.value)
        record = ExportRecord.model_validate(data)
        check_restorable(record)  # what `Restorer.restore` checks first: one validation
        return record
    unknown = sorted(data.keys() - WRITE_FIELDS)
    if unknown:
        raise ValueError(f"unknown key `{unknown[0]}` (a memory has {', '.join(sorted(WRITE_FIELDS))})")
    return WriteRequest.model_validate({**data, "source": MemorySource.IMPORT.value})  # not the file's claim


def _reason(exc: ValueError | InvalidInputError) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"invalid `{'.'.join(str(p) for p in e['loc']) or 'line'}`: {e['msg']}" for e in exc.errors()
        )
    return str(exc)


class ImportRun:
    """Applies parsed lines to one service and counts what each did, per tenant.

    `tenant` receives the WriteRequests; export records keep their own tenant unless `move` is
    set. `stopped` turns true when a backend failed: the import must stop, whatever the mode.
    """

    def __init__(self, service: MemoryService, tenant: str, move: bool) -> None:
        self.service = service
        self.tenant = tenant
        self.move = move
        self.restorer = Restorer(service)
        self.counts: dict[str, dict[str, int]] = {}
        """tenant -> action (`created`, `merged`, `superseded`, `restored`, `already present`) -> lines."""
        self.stopped = False

    def apply(self, line: Line) -> str | None:
        """Write or restore one line; why it was refused, or None when it landed."""
        try:
            tenant, action = self._apply(line)
        except RearviewError as exc:
            self.stopped = isinstance(exc, BackendError)
            return str(exc)
        tally = self.counts.setdefault(tenant, {})
        tally[action] = tally.get(action, 0) + 1
        return None

    def _apply(self, line: Line) -> tuple[str, str]:
        if isinstance(line, ExportRecord):
            restored = self.restorer.restore(line, self.tenant if self.move else None)
            return restored.memory.tenant_id, "already present" if restored.present else "restored"
        return self.tenant, self.service.write(self.tenant, line).action.value

    def finish(self) -> None:
        """Index what the restorer still holds."""
        self.restorer.flush()

    def unindexed_note(self) -> str:
        """A sentence for the summary when restored memories could not be indexed; else empty."""
        if not self.restorer.unindexed:
            return ""
        return f"; {self.restorer.unindexed} restored memories not indexed (run `rearview reindex`)"
