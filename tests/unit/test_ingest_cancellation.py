"""Cancelling an ingest stops it between messages and says what was stored (issue 33.4).

Before, cancelling a 200-message `memory_ingest` (a `notifications/cancelled`, or the connection
closed) stored all 200 anyway: the worker thread ran on. Now the tool's task cancellation reaches
the thread through a flag (`api/tools._cancellable`) that `Ingester.ingest` polls between messages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import anyio
import pytest

from rearview.api.fair_share import FairLane
from rearview.api.tools import _cancellable
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.clock import ManualClock
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import IngestMessage, IngestRequest, MemoryFilter, MemoryType
from rearview.service.memory_service import MemoryService
from tests.factories import T0

TURNS = 200


def conversation() -> IngestRequest:
    messages = [
        IngestMessage(speaker="Ann" if i % 2 else "Bo", content=f"Turn {i}: about topic{i}",
                      timestamp=T0 - timedelta(minutes=TURNS - i), message_id=f"m{i}")
        for i in range(TURNS)
    ]  # fmt: skip
    return IngestRequest(messages=messages, session_id="long")


def after(polls: int) -> Callable[[], bool]:
    """A `cancelled` that turns True on its `polls`-th call (the caller went away mid-ingest)."""
    count = 0

    def cancelled() -> bool:
        nonlocal count
        count += 1
        return count > polls

    return cancelled


def episodes(service: MemoryService) -> int:
    flt = MemoryFilter(session_id="long", types=(MemoryType.EPISODIC,))
    return len(service.store.list_memories("t1", flt, limit=500).items)


@pytest.fixture
def service() -> MemoryService:
    clock = ManualClock(T0)
    return MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), HashingEmbedder(64), clock)


def test_a_cancelled_ingest_stops_between_messages_with_what_it_stored(service: MemoryService) -> None:
    result = service.ingest("t1", conversation(), cancelled=after(37))
    assert result.cancelled
    assert [o.message_id for o in result.messages] == [f"m{i}" for i in range(37)]
    assert episodes(service) == 37  # exactly what the result lists, committed
    assert service.index.count("t1") == result.created

    rest = service.ingest("t1", conversation())  # re-sending stores the rest, replays the first 37
    assert not rest.cancelled and rest.replayed == 37
    assert episodes(service) == TURNS


def test_an_uncancelled_ingest_runs_to_the_end(service: MemoryService) -> None:
    result = service.ingest("t1", conversation())
    assert not result.cancelled and len(result.messages) == TURNS


async def test_cancelling_the_call_reaches_the_worker_thread() -> None:
    started, saw_cancel = threading.Event(), threading.Event()

    def work(cancelled: Callable[[], bool]) -> int:
        started.set()
        saw_cancel.wait(0) or _poll_until(cancelled, saw_cancel)
        return 1

    async with anyio.create_task_group() as group:
        group.start_soon(_cancellable, FairLane("memory_ingest", 1, 1), "t1", work)
        await anyio.to_thread.run_sync(started.wait, 30)
        group.cancel_scope.cancel()  # what the SDK does to the request's task
    assert await anyio.to_thread.run_sync(saw_cancel.wait, 30)


def _poll_until(cancelled: Callable[[], bool], done: threading.Event) -> bool:
    """Poll as `Ingester.ingest` does, between pieces of work, for at most 30 s."""
    for _ in range(30_000):
        if cancelled():
            done.set()
            return True
        threading.Event().wait(0.001)
    return False
