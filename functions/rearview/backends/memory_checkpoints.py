"""InMemoryCheckpointStore: lifecycle job progress in a dict (tests, and a process that runs alone)."""

from __future__ import annotations

import threading


class InMemoryCheckpointStore:
    """A dict-backed `CheckpointStore`. Thread-safe; forgotten when the process ends."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def ensure_schema(self) -> None:
        """Nothing to create."""

    def load(self, tenant_id: str, job: str) -> str | None:
        with self._lock:
            return self._states.get((tenant_id, job))

    def save(self, tenant_id: str, job: str, state: str) -> None:
        with self._lock:
            self._states[(tenant_id, job)] = state

    def delete(self, tenant_id: str, job: str) -> None:
        with self._lock:
            self._states.pop((tenant_id, job), None)
