"""`Lazy`: a value built on first use, once, even when threads race for it.

The adapters use it for their SDK clients (boto3, opensearch-py): a constructor must do no I/O
and building a client reads credentials and configuration, so it waits for the first call, and
a Lambda's concurrent request threads must not each build one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Lazy"]

T = TypeVar("T")


class Lazy(Generic[T]):
    """Holds `value` if given (e.g. an injected client), else builds it with `build()` on first `get()`.

    `build` runs at most once per successful build (double-checked under a lock); if it raises,
    the error propagates and the next `get()` tries again. `build` must not return None.
    """

    def __init__(self, build: Callable[[], T], value: T | None = None) -> None:
        self._build = build
        self._value = value
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """True once the value exists (given at construction or built by `get()`)."""
        return self._value is not None

    def get(self) -> T:
        """The value, building it first if this is the first call."""
        value = self._value
        if value is None:
            with self._lock:
                value = self._value
                if value is None:
                    value = self._value = self._build()
        return value
