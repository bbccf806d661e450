"""Courtesy: while a lighter tenant's request is being served, a heavier tenant's call steps aside.

Python runs one thread at a time (the GIL). A lane (`api/fair_share.py`) bounds when a call starts,
not how much of the interpreter it gets: beside another tenant's back-to-back searches, each all
Python once its query embedding was cached, a tenant's search got about half of the GIL and its p95
rose 3.3-4x. Its request's work on the event loop (parsing, auth, the MCP SDK, serializing) was
slowed the same way: each time the loop came back from the selector it waited for the GIL the
searching thread held, up to the interpreter's switch interval.

So one `Courtesy` per app counts, for each tenant, its *visits*: a request to `/mcp` from the
moment its body is in hand (`CourtesyScope`) until its response starts, a signed-in request of the
memory browser while it is served (`rearview.ui.tenant_share`), or a lane call made outside a
request (tests, the Python API). A tenant's demand is its visits; a visit is *active* unless it is
waiting for a lane's turn. At a yield point (`rearview.shared.yield_points`) a call sleeps, holding no GIL,
while another tenant with a smaller demand has an active visit, at most `max_pause_s` per point: the
tenant asking less gets the interpreter first, on the loop and in its thread, as the lanes give it
a thread first. On the loop, where nothing can sleep, the heavier request waits its turn
(`give_way`) before its work starts and again before its result is serialized, under the same
bound. Tenants of equal demand never wait for each other, and a call never waits for a
visit that waits for a lane (that visit may be waiting for the very call that would pause).

Before a tenant is known (the request head, auth) nothing can step aside, and the loop thread
retakes the GIL after every wait on its selector, up to the interpreter's switch interval each time
while a lane thread runs Python: `share_the_interpreter` shortens that interval for `rearview serve`.

Measured with `benchmarks/fairness/noisy_neighbour.py --loads repeats` (AMD EPYC Zen 1, 2 cores),
B's search p50/p95 ratio: 1.53/1.96 when only B's calls in threads counted (one sitting); with
whole requests counted and `give_way`, 1.31/1.43; with the 1 ms switch interval too, 1.15/1.24
(those two in one sitting).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TypeVar

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rearview.api.auth import TENANT_STATE_KEY
from rearview.shared.yield_points import run_with_hook

__all__ = [
    "COURTESY_MAX_PAUSE_S",
    "GIL_SWITCH_INTERVAL_MS",
    "Courtesy",
    "CourtesyScope",
    "Visit",
    "share_the_interpreter",
]

T = TypeVar("T")

COURTESY_MAX_PAUSE_S = 0.05
"""The longest one yield point waits for lighter tenants: a heavy call is slowed, never stopped."""

GIL_SWITCH_INTERVAL_MS = 1.0
"""How long a thread running Python keeps the GIL from one waiting for it (Python's default: 5 ms);
`REARVIEW_GIL_SWITCH_INTERVAL_MS` (the settings' default is this)."""

_visiting: ContextVar[str | None] = ContextVar("rearview_courtesy_visit", default=None)
"""The tenant whose request this task serves (set by `CourtesyScope`): its lane calls count no twice."""


class Visit:
    """One request or lane call of a tenant, counted in its demand until `leave` (idempotent)."""

    def __init__(self, courtesy: Courtesy, tenant_id: str) -> None:
        self._courtesy = courtesy
        self.tenant_id = tenant_id
        self._left = False

    def leave(self) -> None:
        if not self._left:
            self._left = True
            self._courtesy._leave(self.tenant_id)


class Courtesy:
    """Which tenant's call steps aside for which at a yield point (see the module docstring).

    Visits change on the event loop only (`demand` there; the active counts also under a lock,
    which wakes threads stepping aside when a visit ends or starts waiting). `step_aside` reads
    `demand` from a thread (a dictionary read: a stale count delays or skips one pause, nothing
    else); `give_way` is its counterpart on the loop.
    """

    def __init__(self, max_pause_s: float = COURTESY_MAX_PAUSE_S) -> None:
        self.max_pause_s = max_pause_s
        self.demand: Counter[str] = Counter()
        self._active: Counter[str] = Counter()
        self._changed = threading.Condition(threading.Lock())
        self._loop_changed: anyio.Event | None = None
        """Set (and dropped) on the loop when a visit stops being active: wakes `give_way`."""

    def arrive(self, tenant_id: str) -> Visit:
        """A new active visit of `tenant_id`; the caller must `leave` it."""
        self.demand[tenant_id] += 1
        with self._changed:
            self._active[tenant_id] += 1
        return Visit(self, tenant_id)

    @asynccontextmanager
    async def request(self, tenant_id: str) -> AsyncIterator[Visit]:
        """The block serves a request of `tenant_id`: a visit (which may be left early), after `give_way`.

        Lane calls made in the block count in this visit, not as visits of their own.
        """
        visit = self.arrive(tenant_id)
        token = _visiting.set(tenant_id)
        try:  # a request cancelled while it gives way leaves too
            await self.give_way(tenant_id)
            yield visit
        finally:
            visit.leave()
            _visiting.reset(token)

    @contextmanager
    def call(self, tenant_id: str) -> Iterator[None]:
        """A lane call of `tenant_id`: a visit of its own unless its request is one already."""
        if _visiting.get() == tenant_id:
            yield
            return
        visit = self.arrive(tenant_id)
        try:
            yield
        finally:
            visit.leave()

    @contextmanager
    def waiting(self, tenant_id: str) -> Iterator[None]:
        """One of `tenant_id`'s visits waits for a lane's turn: not active meanwhile."""
        self._set_active(tenant_id, -1)
        try:
            yield
        finally:
            self._set_active(tenant_id, +1)

    def run(self, tenant_id: str, fn: Callable[[], T]) -> T:
        """`fn()` in this thread as `tenant_id`'s call, its yield points stepping aside."""
        self.step_aside(tenant_id)  # a call that has not started yet steps aside first
        return run_with_hook(lambda: self.step_aside(tenant_id), fn)

    async def give_way(self, tenant_id: str) -> None:
        """`step_aside` on the event loop: wait, not blocking the loop, at most `max_pause_s`.

        Before a request's work on the loop starts, and after its lane call returned (its result is
        serialized on the loop).
        """
        deadline = anyio.current_time() + self.max_pause_s
        while self._lighter_active(tenant_id):
            left = deadline - anyio.current_time()
            if left <= 0:
                return
            if self._loop_changed is None:
                self._loop_changed = anyio.Event()
            with anyio.move_on_after(left):
                await self._loop_changed.wait()

    def step_aside(self, tenant_id: str) -> None:
        """Wait while a lighter tenant has an active visit, at most `max_pause_s` in all."""
        deadline = time.monotonic() + self.max_pause_s
        with self._changed:
            while self._lighter_active(tenant_id):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def _lighter_active(self, tenant_id: str) -> bool:
        """Whether another tenant asking less than `tenant_id` has an active visit.

        Under the lock, or on the loop (where visits change).
        """
        mine = self.demand.get(tenant_id, 0)
        return any(self.demand.get(t, 0) < mine for t in self._active if t != tenant_id)

    def _leave(self, tenant_id: str) -> None:
        self._set_active(tenant_id, -1)
        self.demand[tenant_id] -= 1
        if self.demand[tenant_id] <= 0:
            del self.demand[tenant_id]

    def _set_active(self, tenant_id: str, change: int) -> None:
        with self._changed:
            self._active[tenant_id] += change
            if self._active[tenant_id] <= 0:
                del self._active[tenant_id]
            if change < 0:
                self._changed.notify_all()
        if change < 0 and self._loop_changed is not None:
            self._loop_changed.set()
            self._loop_changed = None


class CourtesyScope:
    """ASGI middleware: a request to `path` is a visit of its tenant until its response starts.

    Behind `TenantAuth` (which names the tenant) and after the body was read (`RequestIdGuard`):
    a client that trickles its body or reads its response slowly is not served meanwhile, so it
    makes nobody step aside.
    """

    def __init__(self, app: ASGIApp, courtesy: Courtesy, path: str) -> None:
        self.app = app
        self.courtesy = courtesy
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tenant_id = scope.get("state", {}).get(TENANT_STATE_KEY)
        if scope["type"] != "http" or tenant_id is None or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        async with self.courtesy.request(tenant_id) as visit:

            async def sending(message: Message) -> None:
                if message["type"] == "http.response.start":
                    visit.leave()
                await send(message)

            await self.app(scope, receive, sending)


def share_the_interpreter(interval_ms: float = GIL_SWITCH_INTERVAL_MS) -> None:
    """Hand the GIL on every `interval_ms` (process-wide: for `rearview serve`).

    A single request on Lambda has nobody to share with and keeps Python's default. One tenant's
    throughput did not measurably change: `benchmarks/speed/concurrent_search.py --memories 1000
    --clients 8 --queries 20 --modes today` (AMD EPYC Zen 1, 2 cores), alternated 1/5/1/5 ms in
    one sitting, 25.3 and 26.5 searches/s at 1 ms against 25.0 and 25.0 at 5 ms.
    """
    sys.setswitchinterval(interval_ms / 1000)
