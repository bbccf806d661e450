"""The memory browser's share of the server: the signed-in tenant's request rate, lanes and courtesy.

The browser is served outside `TenantAuth` (it signs in with a cookie, not a key), so it meets the
tenant's fair share here instead, the same share its `/mcp` requests get (`rearview.api.fair_share`):

- each page or form of a signed-in session takes one request from the tenant's bucket
  (`TenantRateLimiter`, the one `TenantAuth` uses): over the rate it is held like an `/mcp` request,
  then answered 429 with `Retry-After`;
- its searches run in the search lane and every other service call in the write lane, as the
  tenant (`tools.Lanes`, the ones `/mcp`'s tools use); beyond the tenant's share they wait their
  turn, and past the lane's queue they are refused (`BusyError`);
- while it is served it is a visit of the tenant (`Courtesy.request`): heavier tenants' calls step
  aside for it, and its calls step aside for lighter tenants' requests.

Before: the browser's calls ran in anyio's shared thread pool, outside all three, and one tenant's
16 threads of `GET /ui/search` raised another tenant's `/mcp` search p95 25-fold (issue 45.1).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

import anyio

from rearview.api.fair_share import DEFAULT_FAIRNESS
from rearview.api.tenant_rate import TenantRateLimiter
from rearview.api.tools import Lanes
from rearview.service.memory_service import MemoryService

__all__ = ["TenantShare"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TenantShare:
    """The lanes and request rate the browser's requests share with `/mcp`'s (see the module docstring)."""

    lanes: Lanes
    rate: TenantRateLimiter | None = None
    """None: no request rate (as `Fairness.rate` with the rate off)."""

    @classmethod
    def build(cls, service: MemoryService) -> TenantShare:
        """A share of its own, with the default fairness (a UI served without `/mcp`: tests, tools)."""
        return cls(Lanes.build(service, fairness=DEFAULT_FAIRNESS), DEFAULT_FAIRNESS.rate())

    async def admit(self, tenant_id: str) -> int:
        """One request of `tenant_id`: 0 when admitted, else seconds to wait (after the rate's hold)."""
        if self.rate is None:
            return 0
        wait = self.rate.admit(tenant_id)
        if wait and self.rate.hold_s:  # as `TenantAuth` holds an `/mcp` request over the rate
            await anyio.sleep(min(self.rate.hold_s, wait))
        return wait

    @asynccontextmanager
    async def visit(self, tenant_id: str) -> AsyncIterator[None]:
        """The block serves one request of `tenant_id` (`Courtesy.request`)."""
        async with self.lanes.search.courtesy.request(tenant_id):
            yield

    async def search(self, tenant_id: str, fn: Callable[[], T]) -> T:
        """`fn()` in the search lane as `tenant_id`."""
        return await self.lanes.search.run(tenant_id, fn)

    async def call(self, tenant_id: str, fn: Callable[[], T]) -> T:
        """`fn()` (any other service call) in the write lane as `tenant_id`, as `/mcp`'s tools run them."""
        return await self.lanes.writes.run(tenant_id, fn)
