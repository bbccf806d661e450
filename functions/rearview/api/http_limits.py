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
- `ConnectionLedger`: a share of the connections per client address. uvicorn's own limit
  (`limit_concurrency`) is global: one address holding 1,000 idle connections made every other
  client's requests 503. Here an address holds at most `Limits.per_address` connections (an IPv6
  address: its /64), of which at most `Limits.unauthenticated_per_address` have not yet carried an
  authenticated request, and all addresses together at most half of `max_connections`
  unauthenticated ones; a connection past a share is answered at once (429 for the address's share,
  503 for the server's), before it costs anything else, and closed `head_s` later (a client that
  reopens what the server closes reopens no faster than a silent connection lets it). Idle,
  unauthenticated connections thus get the smallest share, and the global limit stays larger than
  any one address's. Behind a trusted proxy every client is the proxy's address: there
  `Limits.from_settings` turns the shares off and the proxy shares connections out.
- `server_options`: the head limit, the ledger and uvicorn's own idle, size and concurrency limits,
  as the keywords `rearview serve` passes to uvicorn.

On Lambda none of this applies: API Gateway or the Function URL buffer the request first.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from rearview.api.auth import TENANT_STATE_KEY
from rearview.api.errors import error_body
from rearview.settings import Settings

__all__ = ["ConnectionLedger", "HeadTimeoutH11Protocol", "Limits", "address_key", "server_options"]


HEAD_TIMEOUT_S = 10.0
REFUSED_RETRY_S = 1
"""`Retry-After` of a connection refused for its address's or the server's share."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Seconds and bytes a client gets (see the module docstring)."""

    head_s: float = HEAD_TIMEOUT_S
    idle_s: float = 5.0
    """Between requests on a kept-alive connection (uvicorn's `timeout_keep_alive`)."""
    max_head_bytes: int = 16 * 1024
    max_connections: int = 1000
    """Concurrent connections and tasks before uvicorn answers 503 (`limit_concurrency`)."""
    per_address: int = 64
    """Open connections one client address may hold; 0: no shares (per address or unauthenticated)."""
    unauthenticated_per_address: int = 32
    """Of those, connections that have not yet carried an authenticated request."""

    def __post_init__(self) -> None:
        if self.per_address < 0 or self.unauthenticated_per_address < 1:
            raise ValueError("per_address must be >= 0 and unauthenticated_per_address >= 1")

    @property
    def unauthenticated(self) -> int:
        """Unauthenticated connections of all addresses together: half the server's."""
        return max(1, self.max_connections // 2)

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The shares of `connections_per_address` (half of it unauthenticated).

        None behind a trusted proxy (`trust_forwarded_headers`): every connection comes from its address.
        """
        per_address = 0 if settings.trust_forwarded_headers else settings.connections_per_address
        return cls(per_address=per_address, unauthenticated_per_address=max(1, per_address // 2))


class ConnectionLedger:
    """Open connections by client address, for one server (see the module docstring).

    Used from the server's event loop only. Whether a connection has authenticated is read from the
    ASGI scope of its latest request, where `TenantAuth` names the tenant.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._open: dict[str, set[HeadTimeoutH11Protocol]] = {}
        self._unauthenticated = 0
        """Connections of all addresses not yet authenticated, as last counted (`admit` recounts)."""

    def admit(self, connection: HeadTimeoutH11Protocol, address: str) -> tuple[int, str] | None:
        """Record `connection` from `address`; None when it may stay, else the status and why not."""
        held = self._open.get(address, set())
        limits = self.limits
        if limits.per_address and len(held) >= limits.per_address:
            return 429, f"this address already holds {len(held)} connections"
        waiting = sum(1 for c in held if not c.authenticated)
        if limits.per_address and waiting >= limits.unauthenticated_per_address:
            return 429, f"this address already holds {waiting} connections that have not authenticated"
        if self._unauthenticated >= limits.unauthenticated:
            self._unauthenticated = sum(1 for c in self._all() if not c.authenticated)
            if self._unauthenticated >= limits.unauthenticated:
                return 503, "the server holds too many connections that have not authenticated"
        self._open.setdefault(address, held).add(connection)
        self._unauthenticated += 1
        return None

    def release(self, connection: HeadTimeoutH11Protocol, address: str) -> None:
        held = self._open.get(address)
        if held is None or connection not in held:
            return
        held.discard(connection)
        if not connection.authenticated:
            self._unauthenticated = max(0, self._unauthenticated - 1)
        if not held:
            del self._open[address]

    def authenticated(self) -> None:
        """A connection admitted unauthenticated just authenticated."""
        self._unauthenticated = max(0, self._unauthenticated - 1)

    def holding(self, address: str) -> int:
        return len(self._open.get(address, ()))

    def _all(self) -> list[HeadTimeoutH11Protocol]:
        return [c for held in self._open.values() for c in held]


def address_key(host: str) -> str:
    """The share a peer address counts against: the address itself, an IPv6 one's /64 network."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete within `head_s`."""

    head_s: float = HEAD_TIMEOUT_S
    ledger: ConnectionLedger | None = None
    """The server's record of connections per address (None: no share per address)."""

    _head_deadline: asyncio.TimerHandle | None = None
    _address: str | None = None
    _authenticated = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.ledger is not None and self.client is not None:
            address = address_key(self.client[0])
            refused = self.ledger.admit(self, address)
            if refused is not None:
                self._refuse(*refused)
                return
            self._address = address
        self._arm()

    @property
    def authenticated(self) -> bool:
        """Whether a request on this connection has authenticated (as `TenantAuth` marked its scope)."""
        if (
            not self._authenticated
            and self.scope is not None
            and self.scope.get("state", {}).get(TENANT_STATE_KEY)
        ):
            self._authenticated = True
            if self.ledger is not None and self._address is not None:
                self.ledger.authenticated()
        return self._authenticated

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request head arrived: the body has `BodyTimeout`

    def on_response_complete(self) -> None:
        _ = self.authenticated  # counted as soon as known
        self._arm()  # the next head must come in time too (a pipelined one disarms it at once)
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.ledger is not None and self._address is not None:
            self.ledger.release(self, self._address)
            self._address = None
        super().connection_lost(exc)

    def _refuse(self, status: int, reason: str) -> None:
        """Answer a connection past its share at once, before it reads anything; close it after `head_s`.

        A client reads the answer and closes. One that waits for the server to close, to open another
        at once, waits as a silent connection would; meanwhile the connection counts against no
        limit (it is out of uvicorn's `connections`) and nothing it sends is read.
        """
        title = "Too Many Requests" if status == 429 else "Service Unavailable"
        body = error_body("too_many_connections", f"{reason}: close one, or retry in {REFUSED_RETRY_S} s")
        head = (
            f"HTTP/1.1 {status} {title}\r\ncontent-type: application/json\r\n"
            f"retry-after: {REFUSED_RETRY_S}\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.pause_reading()
        self.connections.discard(self)
        self._head_deadline = self.loop.call_later(self.head_s, self.transport.close)

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

    Each call makes a new `ConnectionLedger`: call it once per server. The body limit is
    `BodyTimeout`, which `create_app` puts around the app.
    """
    ledger = ConnectionLedger(limits) if limits.per_address else None
    protocol = type(
        "LimitedH11Protocol", (HeadTimeoutH11Protocol,), {"head_s": limits.head_s, "ledger": ledger}
    )
    return {
        "http": protocol,
        "timeout_keep_alive": max(1, round(limits.idle_s)),
        "h11_max_incomplete_event_size": limits.max_head_bytes,
        "limit_concurrency": limits.max_connections,
    }
