"""A request rate per tenant: a token bucket each, checked right after authentication.

`TenantAuth` asks `TenantRateLimiter.admit` once the caller's tenant is known and before anything
reads the request body: a tenant over its rate is answered 429 with `Retry-After` at the cost of
one dictionary look-up, and no other tenant's bucket is touched. A bucket holds `burst` requests
and refills at `per_second`. The record is bounded by `max_tenants`: the least recently seen tenant
is dropped first, and a tenant not in it has a full bucket (as has one whose bucket refilled, which
is not kept), so dropping one can only ever admit more, never refuse anyone.

A refusal can be held (`hold_s`) before its 429 goes out: a client that sends its next request as
soon as it is answered (a flood, or a retry loop that ignores `Retry-After`) then costs the server
one cheap refusal per held second per connection instead of as many as the event loop can parse.
A held refusal is a sleeping coroutine and one of the address's connections (`api/http_limits.py`
bounds those). `rearview serve` holds them for `RATE_REFUSAL_HOLD_S`; Lambda does not (a held
request is billed duration there, and API Gateway throttles in front).

The default, 20 a second after a burst of 200, is far above what an agent's tool calls reach (a
model answers in seconds, parallel tool calls come a few at a time) and bounds what one tenant's
flood of the cheapest calls may ask of the server: each costs 4-6 ms of server CPU, most of it the
event loop's and under the GIL (`benchmarks/cost/request_cpu.py`, AMD EPYC Zen 1: a refused search
3.9 ms, `memory_stats` 5.6 ms), so at 50 a second a flood held a fifth of a core and another tenant's
search p95 rose 2.7-3x; at 20 it rose 1.6-1.9x (`benchmarks/fairness/noisy_neighbour.py --loads
refused`). On Lambda each warm container keeps its own buckets; API
Gateway's throttling is the limit across them.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["TenantRateLimiter"]

REQUESTS_PER_SECOND = 20.0
BURST = 200
MAX_TENANTS = 100_000
RATE_REFUSAL_HOLD_S = 1.0
"""How long `rearview serve` holds a request over its tenant's rate before answering 429 (at most
its `Retry-After`, which is at least 1 s)."""


class TenantRateLimiter:
    """One token bucket per tenant (see the module docstring); thread-safe."""

    def __init__(
        self,
        per_second: float = REQUESTS_PER_SECOND,
        burst: int = BURST,
        max_tenants: int = MAX_TENANTS,
        clock: Callable[[], float] = time.monotonic,
        hold_s: float = 0.0,
    ) -> None:
        if per_second <= 0 or burst < 1 or max_tenants < 1 or hold_s < 0:
            raise ValueError("per_second must be > 0, burst and max_tenants >= 1, hold_s >= 0")
        self.per_second = per_second
        self.hold_s = hold_s
        """Seconds a refused request waits before its 429 (at most its `Retry-After`); 0: answered at once."""
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
