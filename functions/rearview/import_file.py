"""`rearview import`: read a JSON Lines file and apply each line to the service.

A line is either a `WriteRequest` (written through the normal write path: dedup, merge, new id)
or an export record (`service/portability.py`: restored exactly, same id, versions and history).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from rearview.errors import BackendError, RearviewError
from rearview.models import MemorySource, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.portability import ExportRecord, Restorer, is_export_line

Line = WriteRequest | ExportRecord
Problem = tuple[int, str]
"""A line number (1-based) and why the line was not imported."""


def read_lines(path: Path) -> tuple[list[tuple[int, Line]], list[Problem]]:
    """Every non-blank line parsed, and the lines that do not parse (not JSON, not a valid shape)."""
    lines: list[tuple[int, Line]] = []
    problems: list[Problem] = []
    with path.open(encoding="utf-8") as fh:
        for number, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                lines.append((number, parse_line(text)))
            except ValueError as exc:  # JSONDecodeError and ValidationError are ValueErrors
                problems.append((number, _reason(exc)))
    return lines, problems


def parse_line(text: str) -> Line:
    """One line as a WriteRequest or an export record (ValueError if it is neither)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if is_export_line(data):
        memory = data.get("memory")
        if isinstance(memory, dict):  # an export from before provenance was kept: it came in by import
            memory.setdefault("source", MemorySource.IMPORT.value)
        return ExportRecord.model_validate(data)
    return WriteRequest.model_validate({**data, "source": MemorySource.IMPORT.value})  # not the file's claim


def _reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg})"
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"invalid `{'.'.join(str(p) for p in e['loc']) or 'line'}`: {e['msg']}" for e in exc.errors()
        )
    return str(exc)


class ImportRun:
    """Applies parsed lines to one service and counts what each did.

    `tenant` receives the WriteRequests; export records keep their own tenant unless `move` is
    set. `stopped` turns true when a backend failed: the import must stop, whatever the mode.
    """

    def __init__(self, service: MemoryService, tenant: str, move: bool) -> None:
        self.service = service
        self.tenant = tenant
        self.move = move
        self.restorer = Restorer(service)
        self.counts: dict[str, int] = {}
        self.stopped = False

    def apply(self, line: Line) -> str | None:
        """Write or restore one line; why it was refused, or None when it landed."""
        try:
            action = self._apply(line)
        except RearviewError as exc:
            self.stopped = isinstance(exc, BackendError)
            return str(exc)
        self.counts[action] = self.counts.get(action, 0) + 1
        return None

    def _apply(self, line: Line) -> str:
        if isinstance(line, ExportRecord):
            self.restorer.restore(line, self.tenant if self.move else None)
            return "restored"
        return self.service.write(self.tenant, line).action.value

    def finish(self) -> None:
        """Index what the restorer still holds."""
        self.restorer.flush()

    def unindexed_note(self) -> str:
        """A sentence for the summary when restored memories could not be indexed; else empty."""
        if not self.restorer.unindexed:
            return ""
        return f"; {self.restorer.unindexed} restored memories not indexed (run `rearview reindex`)"
