"""Where tool calls run: one `FairLane` each for searches, ingests and every other tool (`Lanes`).

Separate lanes keep a burst of one kind of call from holding the others back; inside a lane each
tenant gets its share (`api/fair_share.py`). `cancellable` runs a long call so that it can stop
early once its caller has gone.
"""

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import anyio

from rearview.api.courtesy import Courtesy
from rearview.api.fair_share import DEFAULT_FAIRNESS, FairLane, Fairness
from rearview.errors import ConfigurationError
from rearview.service.memory_service import MemoryService

T = TypeVar("T")

DISCONNECT_POLL_S = 0.25
"""How often a long call checks whether its client has closed the connection."""


async def cancellable(
    lane: FairLane, tenant_id: str, fn: Callable[[Callable[[], bool]], T], request: object = None
) -> T:
    """Run `fn(cancelled)` in `lane` as `tenant_id`; once the caller is gone, `cancelled()` turns True.

    Gone: the request's task was cancelled (the SDK's `notifications/cancelled`), or the client
    closed the connection, which the stateless HTTP transport does not turn into a cancellation:
    `request` (the Starlette request, when there is one) is polled for it. The thread cannot be
    interrupted, so `fn` polls `cancelled` to stop early (`Ingester.ingest`: between messages).
    """
    gone = threading.Event()
    disconnected = getattr(request, "is_disconnected", None)

    async def watch() -> None:
        while not gone.is_set():
            await anyio.sleep(DISCONNECT_POLL_S)
            if disconnected is not None and await disconnected():
                gone.set()

    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as group:
            if disconnected is not None:
                group.start_soon(watch)
            try:
                result = await lane.run(tenant_id, partial(fn, gone.is_set), abandon_on_cancel=True)
            except Exception as error:  # raised outside the group, so it is not wrapped in a group
                failure = error
            finally:
                group.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        gone.set()
        raise
    if failure is not None:
        raise failure
    return result


WRITE_LANE_WIDTH = 16
"""Threads for every tool but search and ingest; with SQLite's one writer, more would only queue there."""
INGEST_LANE_WIDTH = 16


def search_lane(
    width: int | None = None, per_tenant: int | None = None, courtesy: Courtesy | None = None
) -> FairLane:
    """The lane `memory_search` calls run in: `width` at once (default: the usable CPU count).

    A search is CPU-bound Python plus a query embedding; the GIL lets one thread run at a time, so
    forty searches in forty threads do not finish sooner than in a few, they interleave: every one
    takes as long as the slowest and the tail grows with the load. A lane as wide as the cores keeps
    each search on a core until it is done and queues the rest, which is what bounds p95 under many
    concurrent clients. One tenant runs at most `per_tenant` of them (default: all but one, so
    another tenant's search starts at once), and waiting searches are served tenant by tenant
    (`FairLane`). The other tools run in lanes of their own, so a burst of searches never holds a
    write back behind it.
    """
    chosen = len(os.sched_getaffinity(0)) if width is None else width
    if chosen < 1:
        raise ConfigurationError("search_concurrency", f"must be at least 1, got {chosen}")
    share = max(1, chosen - 1) if per_tenant is None else per_tenant
    if share < 1:
        raise ConfigurationError("tenant_search_concurrency", f"must be at least 1, got {share}")
    return FairLane("memory_search", chosen, share, courtesy=courtesy)


@dataclass(frozen=True, slots=True)
class Lanes:
    """Where tool calls run (`FairLane` each): searches, ingests, and every other tool (`writes`)."""

    search: FairLane
    writes: FairLane
    ingests: FairLane

    @classmethod
    def build(
        cls,
        service: MemoryService,
        search_concurrency: int | None = None,
        fairness: Fairness = DEFAULT_FAIRNESS,
        courtesy: Courtesy | None = None,
    ) -> "Lanes":
        """The lanes of one app, each tenant's share from `fairness`, sharing `courtesy` (else a new one).

        A tenant's ingest beyond the service's `tenant_ingest_concurrency` is refused (`busy`) at once,
        as `MemoryService.ingest` refuses it; its other calls beyond their share wait their turn.
        """
        courtesy = courtesy or Courtesy()
        return cls(
            search_lane(search_concurrency, fairness.search_concurrency, courtesy),
            FairLane("write", WRITE_LANE_WIDTH, fairness.write_concurrency, courtesy=courtesy),
            FairLane(
                "memory_ingest",
                INGEST_LANE_WIDTH,
                service.config.tenant_ingest_concurrency,
                max_waiting=0,
                courtesy=courtesy,
            ),
        )
