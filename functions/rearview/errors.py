"""The one error hierarchy of Rearview.

    RearviewError
    ├── InvalidInputError      bad argument; names the field (and the allowed values)
    ├── ConfigurationError     bad deploy-time setting (environment, config file, key map); names it
    ├── NotFoundError          no such memory for this tenant (absent, expired or purged)
    ├── ConflictError          optimistic-concurrency check failed (stale `expected_version`)
    ├── NotPermittedError      the caller's agent may not change another agent's memory
    ├── AuthenticationError    missing or unknown credentials
    ├── BusyError              the tenant already runs its share of a kind of work; retry later
    └── BackendError           a storage/index/embedding backend failed
        ├── StoreError
        │   ├── StorageFullError       the disk holding the data is full
        │   └── ReadOnlyStorageError   the data (directory or file) cannot be written
        ├── IndexUnavailableError   search degrades to the store instead of failing
        ├── EmbedderError           search degrades to the keyword channel
        ├── LanguageModelError      consolidation falls back to extractive summaries
        └── ArchiveError

Adapters translate SDK errors into these at their boundary (`raise ... from exc`); the API
layer maps them to MCP tool errors / HTTP statuses in exactly one place (`api/errors.py`).
"""

from __future__ import annotations

from collections.abc import Iterable


class RearviewError(Exception):
    """Root of every error Rearview raises on purpose."""


class InvalidInputError(RearviewError):
    """An argument is invalid. `field` names it; `allowed` lists the accepted values for enums."""

    def __init__(self, field: str, problem: str, allowed: Iterable[object] | None = None) -> None:
        self.field = field
        self.problem = problem
        self.allowed = [str(a) for a in allowed] if allowed is not None else None
        suffix = f" (allowed: {', '.join(self.allowed)})" if self.allowed else ""
        super().__init__(f"invalid `{field}`: {problem}{suffix}")


class ConfigurationError(RearviewError):
    """A deploy-time setting is missing or malformed; `setting` names it (an env var, a file, a key).

    Raised while the process starts (building adapters, reading the key map or the config file),
    never because of what a caller sent: it is the operator's to fix, not the client's.
    """

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"invalid `{setting}`: {problem}")


class NotFoundError(RearviewError):
    """No memory with this id exists for the caller's tenant."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory `{memory_id}` not found")


class ConflictError(RearviewError):
    """The memory changed since it was read: re-read and retry with the new `version`."""

    def __init__(self, memory_id: str, expected: int | None, actual: int | None = None) -> None:
        self.memory_id = memory_id
        self.expected = expected
        self.actual = actual
        detail = f"expected version {expected}" + (f", found {actual}" if actual is not None else "")
        super().__init__(f"memory `{memory_id}` was modified concurrently ({detail})")


class NotPermittedError(RearviewError):
    """A credential bound to one agent tried to change a memory another agent wrote (DESIGN: authorship)."""

    def __init__(self, memory_id: str, writer: str, action: str, instead: str) -> None:
        self.memory_id = memory_id
        self.writer = writer
        super().__init__(
            f"memory `{memory_id}` was written by agent `{writer}`: a credential bound to another agent "
            f"may not {action} it; {instead}"
        )


class AuthenticationError(RearviewError):
    """The request carries no valid credentials."""


class BusyError(RearviewError):
    """The caller's tenant already runs as many calls of this kind as it may; retry when one returns."""


class BackendError(RearviewError):
    """A backend failed after bounded retries."""


class StoreError(BackendError):
    """The memory store (source of truth) failed."""


class StorageFullError(StoreError):
    """The disk holding the store is full: nothing was written; free space, then retry."""


class ReadOnlyStorageError(StoreError):
    """The store's data directory or file is read-only: nothing was written."""


class IndexUnavailableError(BackendError):
    """The search index is unreachable or too slow; callers degrade to the store."""


class EmbedderError(BackendError):
    """The embedding model failed; callers degrade to keyword search."""


class LanguageModelError(BackendError):
    """The language model (summaries, contradiction checks) failed."""


class ArchiveError(BackendError):
    """The archive failed to write, read or delete an archived memory."""
