"""How long a connection may take to say what it wants: the HTTP limits of `rearview serve`.

uvicorn closes a keep-alive connection idle between requests (`timeout_keep_alive`) and bounds
the request head's size (`h11_max_incomplete_event_size`), but it never times out a socket that
connects and then sends nothing, or a head or a body that trickles in a byte at a time: each such
socket is held forever, and a few hundred of them exhaust the process. Here:

- `HeadTimeoutH11Protocol`: the request head (request line and headers) must be complete within
  `Limits.head_s` of the connection opening or of the previous response; else the socket is
  closed. Nothing was handed to the app yet, so there is nothing to answer.
- `BodyTimeout` (`rearview.api.body_timeout`, around every app `create_app` builds): the whole
  body must arrive within `BODY_TIMEOUT_S` of the app first reading it; else 408.
- `server_options`: the head limit and uvicorn's own idle, size and concurrency limits, as the
  keywords `rearview serve` passes to uvicorn.

On Lambda none of this applies: API Gateway or the Function URL buffer the request first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeadTimeoutH11Protocol", "Limits", "server_options"]


HEAD_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Limits:
    """Seconds and bytes a client gets (see the module docstring)."""

    head_s: float = HEAD_TIMEOUT_S
    idle_s: float = 5.0
    """Between requests on a kept-alive connection (uvicorn's `timeout_keep_alive`)."""
    max_head_bytes: int = 16 * 1024
    max_connections: int = 1000
    """Concurrent connections and tasks before uvicorn answers 503 (`limit_concurrency`)."""


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete within `head_s`."""

    head_s: float = HEAD_TIMEOUT_S

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request head arrived: the body has `BodyTimeout`

    def on_response_complete(self) -> None:
        self._arm()  # the next head must come in time too (a pipelined one disarms it at once)
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(self.head_s, self._expire)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _expire(self) -> None:
        self._head_deadline = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()


def server_options(limits: Limits = Limits()) -> dict[str, Any]:
    """The uvicorn settings (`uvicorn.run`/`uvicorn.Config` keywords) that apply `limits` to connections.

    The body limit is `BodyTimeout`, which `create_app` puts around the app.
    """
    protocol = type("LimitedH11Protocol", (HeadTimeoutH11Protocol,), {"head_s": limits.head_s})
    return {
        "http": protocol,
        "timeout_keep_alive": max(1, round(limits.idle_s)),
        "h11_max_incomplete_event_size": limits.max_head_bytes,
        "limit_concurrency": limits.max_connections,
    }
