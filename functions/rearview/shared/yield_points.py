"""Yield points: where a long call may step aside while a lighter tenant's call runs.

Python runs one thread at a time (the GIL). When two tenants' calls are both in Python, each gets
about half of it, so a short call of a light tenant took up to twice as long beside a heavy tenant's
search. The API's lanes (`api/fair_share.py`) set a `step_aside` hook on the thread that runs a call;
service code calls `yield_point()` between its stages, and the hook may sleep there (holding no GIL)
while a lighter tenant's request is served (`api/courtesy.py`). Outside a lane (the CLI, the Python
client, Lambda: one call per process) there is no hook and `yield_point()` does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["YIELD_EVERY", "run_with_hook", "yield_point"]

T = TypeVar("T")

YIELD_EVERY = 25
"""Items a loop over candidates handles between two yield points (about a millisecond of Python)."""

_thread = threading.local()


def yield_point() -> None:
    """Let the current call step aside, if the thread running it has a hook (else nothing)."""
    step_aside: Callable[[], None] | None = getattr(_thread, "step_aside", None)
    if step_aside is not None:
        step_aside()


def run_with_hook(step_aside: Callable[[], None], fn: Callable[[], T]) -> T:
    """`fn()` on this thread with `step_aside` as the hook its yield points call."""
    before = getattr(_thread, "step_aside", None)
    _thread.step_aside = step_aside
    try:
        return fn()
    finally:
        _thread.step_aside = before
