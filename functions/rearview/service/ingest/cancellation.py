"""How a long ingest learns that its caller has gone: a `Cancelled` check, polled between messages.

Apart from `ingester`, so that `MemoryService.ingest` can name its default without loading the ingest path.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["NEVER", "Cancelled"]

Cancelled = Callable[[], bool]
"""Polled between messages: True once the caller has gone (`api/tools/lanes.py` sets it on cancellation)."""


def NEVER() -> bool:  # noqa: N802 - a constant-like default
    """The default `Cancelled`: an ingest runs to the end."""
    return False
