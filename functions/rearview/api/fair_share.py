"""Each tenant's fair share of one server: `FairLane` for the work, `Fairness` for the settings.

`Fairness` gathers what `create_app` gives each tenant: a request rate (`rearview.api.tenant_rate`,
checked by `TenantAuth` before a body is read) and its share of the lanes its tool calls run in.

Tool calls run their service code in threads. In one shared pool (anyio's, 40 threads) a tenant
that sent 40 calls at once held every thread, and another tenant's call waited behind all of them.
A lane bounds that:

- at most `width` calls of the lane run at once (its own threads: lanes never wait for each other);
- at most `per_tenant` of them are one tenant's, so with `per_tenant` < `width` a call of another
  tenant finds a free thread at once;
- a call that cannot start waits on the event loop, holding no thread; when one returns, the
  waiting calls are admitted one tenant at a time, round-robin, oldest first within a tenant, so a
  tenant with a hundred calls waiting delays another's by one turn, not by a hundred;
- a tenant that already has `max_waiting` calls waiting is refused the next one (`BusyError`: the
  tool answers `busy`) instead of queueing without end.

A lane's bookkeeping is done on the event loop, in one thread: each app's lanes belong to the
event loop that serves it.

A thread bounds when a call starts, not how much of the interpreter it gets once running: beside
another tenant's back-to-back searches, each all Python once its query embedding was cached, a
tenant's search got about half of the GIL and its p95 rose 3.3-4x. The lanes of one app share a
`Courtesy` (`api/courtesy.py`) with its `/mcp` requests: a call of the tenant asking more waits at
its yield points while a lighter tenant's request is being served.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import anyio
import anyio.to_thread

from rearview.api.courtesy import Courtesy
from rearview.api.tenant_rate import BURST, RATE_REFUSAL_HOLD_S, REQUESTS_PER_SECOND, TenantRateLimiter
from rearview.config.settings import Settings
from rearview.errors import BusyError, ConfigurationError

__all__ = ["DEFAULT_FAIRNESS", "FairLane", "Fairness"]

T = TypeVar("T")

TENANT_WRITE_CONCURRENCY = 2


@dataclass(frozen=True, slots=True)
class Fairness:
    """What one tenant may ask of a server (the `tenant_*` settings; see `Settings` for each)."""

    requests_per_second: float = REQUESTS_PER_SECOND
    """0: no rate limit."""
    request_burst: int = BURST
    search_concurrency: int | None = None
    """`memory_search` calls of one tenant at once; None: all of the search lane but one."""
    write_concurrency: int = TENANT_WRITE_CONCURRENCY
    """Calls of every other tool but `memory_ingest` (bounded by the service) of one tenant at once."""
    rate_refusal_hold_s: float = 0.0
    """Seconds a request over the rate is held before its 429 (`api/tenant_rate.py`); 0 on Lambda."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Fairness:
        """`rearview serve`'s shares: the settings, and refusals over the rate held `RATE_REFUSAL_HOLD_S`."""
        return cls(
            settings.tenant_requests_per_second,
            settings.tenant_request_burst,
            settings.tenant_search_concurrency,
            settings.tenant_write_concurrency,
            RATE_REFUSAL_HOLD_S,
        )

    def rate(self) -> TenantRateLimiter | None:
        """A new limiter for one app; None when the rate is off."""
        if self.requests_per_second <= 0:
            return None
        return TenantRateLimiter(
            self.requests_per_second, self.request_burst, hold_s=self.rate_refusal_hold_s
        )


DEFAULT_FAIRNESS = Fairness()


class FairLane:
    """A lane of `width` threads shared fairly by tenants (see the module docstring)."""

    def __init__(
        self, kind: str, width: int, per_tenant: int, max_waiting: int = 64, courtesy: Courtesy | None = None
    ) -> None:
        if width < 1 or per_tenant < 1 or max_waiting < 0:
            raise ConfigurationError(
                kind,
                f"width and per_tenant must be >= 1 and max_waiting >= 0 "
                f"(got {width}, {per_tenant}, {max_waiting})",
            )
        self.kind = kind
        self.width = width
        self.per_tenant = min(per_tenant, width)
        self.max_waiting = max_waiting
        self.threads = anyio.CapacityLimiter(width)
        self.courtesy = courtesy or Courtesy()
        """Shared by an app's lanes: a tenant's demand counts its calls in all of them."""
        self._running: Counter[str] = Counter()
        self._total = 0
        self._waiting: OrderedDict[str, deque[anyio.Event]] = OrderedDict()
        """Tenants with calls waiting, in the order they are next served; each tenant's calls oldest first."""

    def running(self, tenant_id: str) -> int:
        """Calls of `tenant_id` running in this lane now."""
        return self._running[tenant_id]

    def waiting(self, tenant_id: str) -> int:
        """Calls of `tenant_id` waiting for a turn now."""
        return len(self._waiting.get(tenant_id, ()))

    async def run(self, tenant_id: str, fn: Callable[[], T], *, abandon_on_cancel: bool = False) -> T:
        """`fn()` in one of the lane's threads, in `tenant_id`'s turn; `BusyError` when too many wait.

        The call is a visit of `tenant_id` (`Courtesy.call`: its request's, when it has one), not
        active while it waits for its turn; in its thread its yield points step aside for lighter
        tenants' requests, and so does its return to the loop.
        """
        with self.courtesy.call(tenant_id):
            async with self.turn(tenant_id):
                result = await anyio.to_thread.run_sync(
                    partial(self.courtesy.run, tenant_id, fn),
                    limiter=self.threads,
                    abandon_on_cancel=abandon_on_cancel,
                )
            await self.courtesy.give_way(tenant_id)  # its result is serialized on the loop
            return result

    @asynccontextmanager
    async def turn(self, tenant_id: str) -> AsyncIterator[None]:
        """Hold one of the lane's slots, as `tenant_id`, for the block (waiting for it fairly).

        Inside `courtesy.call(tenant_id)`: while it waits, that visit is not active.
        """
        if self._may_start(tenant_id) and tenant_id not in self._waiting:
            self._start(tenant_id)
        else:
            with self.courtesy.waiting(tenant_id):
                await self._wait(tenant_id)
        try:
            yield
        finally:
            self._finish(tenant_id)

    async def _wait(self, tenant_id: str) -> None:
        waiting = self.waiting(tenant_id)
        if waiting >= self.max_waiting:
            if self._running[tenant_id] < self.per_tenant:  # the lane is full of other tenants' calls
                raise BusyError(
                    f"the server already runs {self.width} {self.kind} calls; send this one again soon"
                )
            raise BusyError(
                f"this tenant already has {self._running[tenant_id]} {self.kind} call(s) running and "
                f"{waiting} waiting; send this one again when one of them has returned"
            )
        admitted = anyio.Event()
        self._waiting.setdefault(tenant_id, deque()).append(admitted)
        try:
            await admitted.wait()
        except BaseException:
            if admitted.is_set():  # admitted as it was cancelled: hand the slot on
                self._finish(tenant_id)
            else:
                self._forget(tenant_id, admitted)
            raise

    def _may_start(self, tenant_id: str) -> bool:
        return self._total < self.width and self._running[tenant_id] < self.per_tenant

    def _start(self, tenant_id: str) -> None:
        self._running[tenant_id] += 1
        self._total += 1

    def _finish(self, tenant_id: str) -> None:
        self._total -= 1
        self._running[tenant_id] -= 1
        if not self._running[tenant_id]:
            del self._running[tenant_id]
        self._admit()

    def _admit(self) -> None:
        """Hand free slots to waiting calls, tenant by tenant in turn (one at its share is skipped)."""
        for tenant_id in list(self._waiting):
            if self._total >= self.width:
                return
            if self._running[tenant_id] >= self.per_tenant:
                continue
            queue = self._waiting.pop(tenant_id)
            self._start(tenant_id)
            queue.popleft().set()
            if queue:
                self._waiting[tenant_id] = queue  # to the back of the round

    def _forget(self, tenant_id: str, admitted: anyio.Event) -> None:
        queue = self._waiting.get(tenant_id)
        if queue is None:
            return
        queue.remove(admitted)
        if not queue:
            del self._waiting[tenant_id]
