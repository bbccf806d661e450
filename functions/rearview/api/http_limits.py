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
- `ConnectionLedger`: shares of the connections. uvicorn's own limit (`limit_concurrency`) is
  global: one address holding 1,000 idle connections made every other client's requests 503. Here
  a connection that has not yet carried an authenticated request counts against its address's
  share (`Limits.unauthenticated_per_address`; an IPv6 address: its /64), its network's (a /24, an
  IPv6 /48: `Limits.unauthenticated_per_network`) and the server's (half of `max_connections`).
  Past its address's or network's share a connection is answered 429 at once, before it costs
  anything else, and closed `head_s` later (a client that reopens what the server closes reopens no
  faster than a silent connection lets it). When the server's share is full, a newcomer is still
  admitted: the oldest connection waiting for a request head in the network holding the most is
  closed to make room (a flood of silent sockets from many addresses took every newcomer's place:
  96 % of other tenants' requests got 503, issue 45.2), and while the share is over half full a new
  head must come within `Limits.pressured_head_s`. Once a connection authenticates it leaves those
  shares for its tenant's own: `Limits.per_address` connections per tenant and address, so tenants
  behind one NAT do not share one. A connection past it is served, then closed. Behind a trusted
  proxy every client is the proxy's address: there `Limits.from_settings` turns the shares off and
  the proxy shares connections out.
- `server_options`: the head limit, the ledger and uvicorn's own idle, size and concurrency limits,
  as the keywords `rearview serve` passes to uvicorn, with an event loop that backs off quietly when
  `accept()` runs out of descriptors (`rearview.api.accept_backoff`).

On Lambda none of this applies: API Gateway or the Function URL buffer the request first.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from uvicorn.protocols.http.h11_impl import H11Protocol

from rearview.api.auth import TENANT_STATE_KEY
from rearview.api.errors import error_body
from rearview.config.settings import Settings

__all__ = [
    "ConnectionLedger",
    "HeadTimeoutH11Protocol",
    "Limits",
    "address_key",
    "network_key",
    "server_options",
]


HEAD_TIMEOUT_S = 10.0
PRESSURED_HEAD_TIMEOUT_S = 2.0
REFUSED_RETRY_S = 1
"""`Retry-After` of a connection refused for its address's or the server's share."""
NETWORK_SHARES = 4
"""A network's unauthenticated connections: as many as this many of its addresses'."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Seconds and bytes a client gets (see the module docstring)."""

    head_s: float = HEAD_TIMEOUT_S
    pressured_head_s: float = PRESSURED_HEAD_TIMEOUT_S
    """The head timeout of an unauthenticated connection while the server's share of them is half full."""
    idle_s: float = 5.0
    """Between requests on a kept-alive connection (uvicorn's `timeout_keep_alive`)."""
    max_head_bytes: int = 16 * 1024
    max_connections: int = 1000
    """Concurrent connections and tasks before uvicorn answers 503 (`limit_concurrency`)."""
    per_address: int = 64
    """Authenticated connections one tenant may hold from one client address; 0: no shares at all."""
    unauthenticated_per_address: int = 32
    """Connections of one client address that have not yet carried an authenticated request."""
    unauthenticated_per_network: int = NETWORK_SHARES * 32
    """The same, of one /24 (IPv4) or /48 (IPv6) network."""

    def __post_init__(self) -> None:
        if (
            self.per_address < 0
            or self.unauthenticated_per_address < 1
            or self.unauthenticated_per_network < 1
        ):
            raise ValueError("per_address must be >= 0 and the unauthenticated shares >= 1")

    @property
    def unauthenticated(self) -> int:
        """Unauthenticated connections of all addresses together: half the server's."""
        return max(1, self.max_connections // 2)

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The shares of `connections_per_address` (half of it unauthenticated; four addresses' per network).

        None behind a trusted proxy (`trust_forwarded_headers`): every connection comes from its address.
        """
        per_address = 0 if settings.trust_forwarded_headers else settings.connections_per_address
        waiting = max(1, per_address // 2)
        return cls(
            per_address=per_address,
            unauthenticated_per_address=waiting,
            unauthenticated_per_network=NETWORK_SHARES * waiting,
        )


class Tracked(Protocol):
    """What the ledger asks of a connection."""

    @property
    def waiting_for_head(self) -> bool:
        """No request in flight: the connection waits for (the rest of) a request head."""

    def evict(self) -> None:
        """Close the connection now (the ledger has already forgotten it)."""


class ConnectionLedger:
    """Open connections by share, for one server (see the module docstring).

    Used from the server's event loop only. A connection is admitted with its peer's host
    (`admit`), moves to its tenant's share when a request on it authenticated (`authenticated`) and
    is forgotten when it closes (`release`).
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._waiting: dict[Tracked, tuple[str, str]] = {}
        """Unauthenticated connections -> (address, network), oldest first."""
        self._by_address: Counter[str] = Counter()
        self._by_network: Counter[str] = Counter()
        self._keyed: dict[Tracked, tuple[str, str]] = {}
        """Authenticated connections -> (tenant, address)."""
        self._by_tenant: Counter[tuple[str, str]] = Counter()

    def admit(self, connection: Tracked, host: str) -> tuple[int, str] | None:
        """Record `connection` from `host`; None when it may stay, else the status and why not.

        When the server's unauthenticated share is full, another connection may be evicted for it.
        """
        address, network = address_key(host), network_key(host)
        limits = self.limits
        if (held := self._by_address[address]) >= limits.unauthenticated_per_address:
            return 429, f"this address already holds {held} connections that have not authenticated"
        if (held := self._by_network[network]) >= limits.unauthenticated_per_network:
            return (
                429,
                f"this network ({network}) already holds {held} connections that have not authenticated",
            )
        if len(self._waiting) >= limits.unauthenticated:
            victim = self._victim()
            if victim is None:  # every one of them has a request in flight
                return 503, "the server holds too many connections that have not authenticated"
            self.release(victim)
            victim.evict()
        self._waiting[connection] = (address, network)
        self._by_address[address] += 1
        self._by_network[network] += 1
        return None

    def authenticated(self, connection: Tracked, tenant_id: str) -> bool:
        """`connection` carried `tenant_id`'s authenticated request: False when past that tenant's share."""
        where = self._waiting.get(connection)
        if where is None:
            return True
        self._forget_waiting(connection)
        share = (tenant_id, where[0])
        self._keyed[connection] = share
        self._by_tenant[share] += 1
        return self._by_tenant[share] <= self.limits.per_address

    def release(self, connection: Tracked) -> None:
        """Forget `connection` (it closed); idempotent."""
        if connection in self._waiting:
            self._forget_waiting(connection)
        elif (share := self._keyed.pop(connection, None)) is not None:
            self._by_tenant[share] -= 1
            if self._by_tenant[share] <= 0:
                del self._by_tenant[share]

    def head_timeout(self) -> float:
        """The head timeout of a connection not authenticated yet: shorter while the server is crowded."""
        if len(self._waiting) * 2 >= self.limits.unauthenticated:
            return min(self.limits.head_s, self.limits.pressured_head_s)
        return self.limits.head_s

    def unauthenticated(self) -> int:
        return len(self._waiting)

    def holding(self, host: str) -> int:
        """Unauthenticated connections of `host`'s address."""
        return self._by_address[address_key(host)]

    def keyed(self, tenant_id: str, host: str) -> int:
        return self._by_tenant[(tenant_id, address_key(host))]

    def _victim(self) -> Tracked | None:
        """The oldest connection waiting for a head in the network holding the most unauthenticated ones."""
        best: Tracked | None = None
        most = 0
        for connection, (_, network) in self._waiting.items():  # oldest first
            if self._by_network[network] > most and connection.waiting_for_head:
                best, most = connection, self._by_network[network]
        return best

    def _forget_waiting(self, connection: Tracked) -> None:
        address, network = self._waiting.pop(connection)
        for counter, key in ((self._by_address, address), (self._by_network, network)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]


def address_key(host: str) -> str:
    """The share a peer address counts against: the address itself, an IPv6 one's /64 network."""
    return _prefix(host, 32, 64)


def network_key(host: str) -> str:
    """The network share a peer address counts against: its /24 (IPv4) or /48 (IPv6)."""
    return _prefix(host, 24, 48)


def _prefix(host: str, v4_bits: int, v6_bits: int) -> str:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is None:
            return str(ipaddress.IPv6Network((ip, v6_bits), strict=False))
        ip = ip.ipv4_mapped
    if v4_bits == 32:
        return str(ip)
    return str(ipaddress.IPv4Network((ip, v4_bits), strict=False))


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete within `head_s`."""

    head_s: float = HEAD_TIMEOUT_S
    ledger: ConnectionLedger | None = None
    """The server's record of connections per share (None: no shares)."""

    _head_deadline: asyncio.TimerHandle | None = None
    _tracked = False
    _authenticated = False
    _over_share = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.ledger is not None and self.client is not None:
            refused = self.ledger.admit(self, self.client[0])
            if refused is not None:
                self._refuse(*refused)
                return
            self._tracked = True
        self._arm()

    @property
    def waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def evict(self) -> None:
        self._tracked = False
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # a request head arrived: the body has `BodyTimeout`

    def on_response_complete(self) -> None:
        self._note_authentication()
        if self._over_share:  # served; its tenant already holds its share of this address's connections
            self._disarm()
            self.transport.close()
        else:
            self._arm()  # the next head must come in time too (a pipelined one disarms it at once)
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.ledger is not None and self._tracked:
            self.ledger.release(self)
            self._tracked = False
        super().connection_lost(exc)

    def _note_authentication(self) -> None:
        """Move the connection to its tenant's share once a request on it authenticated (`TenantAuth`)."""
        if self._authenticated or self.scope is None:
            return
        tenant_id = self.scope.get("state", {}).get(TENANT_STATE_KEY)
        if tenant_id:
            self._authenticated = True
            if self.ledger is not None and self._tracked:
                self._over_share = not self.ledger.authenticated(self, tenant_id)

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
        timeout = self.head_s
        if self.ledger is not None and self._tracked and not self._authenticated:
            timeout = min(timeout, self.ledger.head_timeout())
        self._head_deadline = self.loop.call_later(timeout, self._expire)

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
        "loop": "rearview.api.accept_backoff:AcceptBackoffLoop",  # out of descriptors: one warning, a pause
    }
