"""`TenantSlots`: at most N calls of one kind per tenant at a time, the next one refused at once.

Why refused and not queued: a waiting call holds a server worker thread, so a tenant that sent 40
ingests at once would hold the whole pool while it waited, which is the stall this bound exists to
prevent. A refused caller gets `BusyError` (`busy`, HTTP 429) and sends the call again when its
running one has returned.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from rearview.errors import BusyError, InvalidInputError

__all__ = ["TenantSlots"]


class TenantSlots:
    """Counts running calls per tenant under one lock; a tenant at `limit` is refused, others never wait."""

    def __init__(self, kind: str, limit: int) -> None:
        if limit < 1:
            raise InvalidInputError("limit", f"must be at least 1 (got {limit})")
        self._kind = kind
        self._limit = limit
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()

    def running(self, tenant_id: str) -> int:
        with self._lock:
            return self._running[tenant_id]

    @contextmanager
    def slot(self, tenant_id: str) -> Iterator[None]:
        """Hold one of the tenant's slots for the `with` block; `BusyError` when none is free."""
        with self._lock:
            if self._running[tenant_id] >= self._limit:
                raise BusyError(
                    f"this tenant already has {self._limit} {self._kind} call(s) running; "
                    "send this one again when one of them has returned"
                )
            self._running[tenant_id] += 1
        try:
            yield
        finally:
            with self._lock:
                self._running[tenant_id] -= 1
                if not self._running[tenant_id]:
                    del self._running[tenant_id]
