"""`rearview serve`'s event loop: out of file descriptors, one warning a minute and a pause, not a flood.

When the process runs out of descriptors (or the kernel of socket memory), `accept()` fails. asyncio's
selector loop then logs the failure with its traceback, stops watching the listening socket for a
second, and carries on calling `accept()` up to the backlog's length (2,048 under uvicorn), logging
and scheduling a retry each time: at `RLIMIT_NOFILE` 1024 that was 42,000 tracebacks in 30 s, and
the log that would say what went wrong drowned in it (issue 45).

`AcceptBackoffLoop` stops at the first such failure: it stops watching the listening socket for
`ACCEPT_PAUSE_S` (waiting connections stay in the kernel's backlog) and logs one warning, then at
most one every `WARN_EVERY_S` with the count of failures since. Every other error is logged as
before. uvicorn runs it through its `loop` setting (`http_limits.server_options`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

__all__ = ["ACCEPT_PAUSE_S", "WARN_EVERY_S", "AcceptBackoffLoop"]

logger = logging.getLogger("rearview.server")

ACCEPT_PAUSE_S = 0.25
"""How long the listening socket is not watched after `accept()` ran out of resources."""
WARN_EVERY_S = 60.0
OUT_OF_RESOURCES = "socket.accept() out of system resource"
"""The message asyncio's selector loop hands its exception handler when `accept()` fails so."""


class _OutOfResourcesError(Exception):
    """Raised out of asyncio's accept loop to end it at the first failure."""


class AcceptBackoffLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose accept loop backs off quietly (see the module docstring).

    It relies on two private methods of asyncio's selector loop, `_accept_connection` and
    `_start_serving` (same arguments, CPython 3.11-3.13); `tests/security/test_accept_exhaustion.py`
    runs a real server out of descriptors.
    """

    accept_pause_s = ACCEPT_PAUSE_S
    warn_every_s = WARN_EVERY_S

    def __init__(self, selector: Any = None) -> None:
        super().__init__(selector)
        self._warned_at: float | None = None
        self._unreported = 0

    def _accept_connection(self, protocol_factory: Any, sock: Any, *args: Any, **kwargs: Any) -> None:
        try:
            super()._accept_connection(protocol_factory, sock, *args, **kwargs)  # type: ignore[misc]
        except _OutOfResourcesError:
            self._remove_reader(sock.fileno())  # type: ignore[attr-defined]
            restart = self._start_serving  # type: ignore[attr-defined]
            self.call_later(self.accept_pause_s, lambda: restart(protocol_factory, sock, *args, **kwargs))

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        if context.get("message") != OUT_OF_RESOURCES:
            super().call_exception_handler(context)
            return
        self._out_of_resources(context.get("exception"))
        raise _OutOfResourcesError

    def _out_of_resources(self, exc: BaseException | None) -> None:
        """Count one failed `accept()`; warn on the first, then at most every `warn_every_s`."""
        self._unreported += 1
        now = time.monotonic()
        if self._warned_at is not None and now - self._warned_at < self.warn_every_s:
            return
        since = (
            "" if self._warned_at is None else f" ({self._unreported} failed accepts since the last warning)"
        )
        logger.warning(
            "accept() failed, out of file descriptors or socket memory (%s)%s: new connections wait in the "
            "listen backlog and are retried every %.2f s. Raise the open-files limit (ulimit -n) or "
            "lower REARVIEW_CONNECTIONS_PER_ADDRESS.",
            exc,
            since,
            self.accept_pause_s,
        )
        self._warned_at = now
        self._unreported = 0
