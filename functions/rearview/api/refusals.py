"""Slowing down key guessing: a client whose credentials keep being refused is refused for a while.

`/mcp` (`auth.TenantAuth`) and the memory browser's login (`rearview.ui`) share one
`RefusedKeyLimiter` per process. After `limit` refused credentials from one client address within
`window_s`, every credential that address presents is answered 429 with `Retry-After`, without
being checked, until the oldest of those refusals is `window_s` old: while locked out, a right
guess is not told apart from a wrong one. A request with no credential is never counted (an
OAuth client's first probe, a health check). The default, 10 a minute, is far more than a
misconfigured agent retrying with backoff sends, and makes guessing even a weak key slow.

The client address is the connection's peer, or, when the deployment trusts forwarded headers,
the `X-Forwarded-For` hop its own proxies appended (`client_address`: with `proxies` trusted
proxies in front, the `proxies`-th hop from the right; every hop left of it is the client's to
write, so keying on the first hop let a guesser pick a fresh address per request and lock out
anyone's); a request from an unknown address is not limited. Only credentials checked here count:
a resolver that trusts a gateway's verdict (JWT mode, `verifies_credentials` False) is never
limited, since its callers were authenticated before the request arrived. The record lives in
this process's memory and is bounded (`max_clients`, least recently refused dropped first): on
Lambda each warm container keeps its own, and API Gateway's throttling is the limit across them.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from starlette.types import Scope

__all__ = ["RefusedKeyLimiter", "client_address"]

log = logging.getLogger(__name__)

REFUSALS_PER_WINDOW = 10
WINDOW_S = 60.0
MAX_CLIENTS = 10_000


class RefusedKeyLimiter:
    """Counts refused credentials per client address in a sliding window (see the module docstring)."""

    def __init__(
        self,
        limit: int | None = REFUSALS_PER_WINDOW,
        window_s: float = WINDOW_S,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
        proxies: int = 0,
    ) -> None:
        if (limit is not None and limit < 1) or window_s <= 0 or max_clients < 1 or proxies < 0:
            raise ValueError("limit and max_clients must be >= 1, window_s > 0 and proxies >= 0")
        self.limit = limit
        """None: never limits (every address may present any number of keys)."""
        self.window_s = window_s
        self.max_clients = max_clients
        self.proxies = proxies
        """Trusted proxies that append to `X-Forwarded-For` (0: the header is not trusted)."""
        self._clock = clock
        self._refusals: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str | None) -> int:
        """Whole seconds until `client` may present a credential again; 0 when it may now (or is unknown)."""
        if client is None or self.limit is None:
            return 0
        with self._lock:
            times = self._recent(client, self._clock())
            if times is None or len(times) < self.limit:
                return 0
            return max(1, math.ceil(times[0] + self.window_s - self._clock()))

    def refused(self, client: str | None) -> None:
        """Record one refused credential from `client` (nothing for an unknown address)."""
        if client is None or self.limit is None:
            return
        with self._lock:
            now = self._clock()
            times = self._recent(client, now)
            if times is None:
                times = self._refusals[client] = deque(maxlen=self.limit)
                while len(self._refusals) > self.max_clients:
                    self._refusals.popitem(last=False)
            times.append(now)
            self._refusals.move_to_end(client)
            if len(times) == self.limit:
                log.warning(
                    "refusing credentials from %s for %.0f s: %d refused in %.0f s",
                    client, self.window_s, self.limit, self.window_s,
                )  # fmt: skip

    def _recent(self, client: str, now: float) -> deque[float] | None:
        """`client`'s refusals within the window (older ones dropped), None when it has none."""
        times = self._refusals.get(client)
        if times is None:
            return None
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._refusals[client]
            return None
        return times


def client_address(scope: Scope, proxies: int) -> str | None:
    """The caller's address: the hop the `proxies` trusted proxies saw, else the connection's peer.

    With `proxies` > 0 the `X-Forwarded-For` headers (all of them, in order, as one list) are read
    from the right: the last trusted proxy appended the address it was connected from, so the
    `proxies`-th hop from the right is the client as the outermost trusted proxy saw it (the
    leftmost hop when the list is shorter). None when the server does not know the address (no
    peer, e.g. a Unix socket): such requests are not limited, since one shared record would let
    anyone lock every client out.
    """
    if proxies > 0:
        values = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"x-forwarded-for"]
        hops = [h.strip() for h in ",".join(values).split(",") if h.strip()]
        if hops:
            return hops[-min(proxies, len(hops))]
    client = scope.get("client")
    return str(client[0]) if client else None
