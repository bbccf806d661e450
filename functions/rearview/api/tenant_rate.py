"""A request rate per tenant: a token bucket each, checked right after authentication.

`TenantAuth` asks `TenantRateLimiter.admit` once the caller's tenant is known and before anything
reads the request body: a tenant over its rate is answered 429 with `Retry-After` at the cost of
one dictionary look-up, and no other tenant's bucket is touched. A bucket holds `burst` requests
and refills at `per_second`. The record is bounded by `max_tenants`: the least recently seen tenant
is dropped first, and a tenant not in it has a full bucket (as has one whose bucket refilled, which
is not kept), so dropping one can only ever admit more, never refuse anyone.

The default, 50 a second after a burst of 200, is far above what an agent's tool calls reach (a
model answers in seconds, parallel tool calls come a few at a time) and bounds what one tenant's
flood may ask of the server. On Lambda each warm container keeps its own buckets; API Gateway's
throttling is the limit across them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["TenantRateLimiter"]

REQUESTS_PER_SECOND = 50.0
BURST = 200
MAX_TENANTS = 100_000


class TenantRateLimiter:
    """One token bucket per tenant (see the module docstring); thread-safe."""

    def __init__(
        self,
        per_second: float = REQUESTS_PER_SECOND,
        burst: int = BURST,
        max_tenants: int = MAX_TENANTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_second <= 0 or burst < 1 or max_tenants < 1:
            raise ValueError("per_second must be > 0, burst and max_tenants >= 1")
        self.per_second = per_second
        self.burst = burst
        self.max_tenants = max_tenants
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """Tenant -> (tokens, when counted); a tenant absent has a full bucket."""
        self._lock = threading.Lock()

    def admit(self, tenant_id: str) -> int:
        """Take one request from `tenant_id`'s bucket: 0 when admitted, else whole seconds to wait (>= 1).

        A refused request takes nothing, so a tenant that keeps asking is admitted as soon as a token
        has refilled.
        """
        with self._lock:
            now = self._clock()
            tokens, then = self._buckets.pop(tenant_id, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.per_second)
            if tokens >= 1.0:
                tokens -= 1.0
                wait = 0
            else:
                wait = max(1, math.ceil((1.0 - tokens) / self.per_second))
            if tokens < self.burst:
                self._buckets[tenant_id] = (tokens, now)
                while len(self._buckets) > self.max_tenants:
                    self._buckets.popitem(last=False)
            return wait
