"""Cancelling an ingest stops it between messages and says what was stored (issue 33.4).

Before, cancelling a 200-message `memory_ingest` (a `notifications/cancelled`, or the connection
closed) stored all 200 anyway: the worker thread ran on. Now the tool's task cancellation reaches
the thread through a flag (`api/tools/lanes.cancellable`) that `Ingester.ingest` polls between messages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import anyio
import pytest

from rearview.api.fair_share import FairLane
from rearview.api.tools.lanes import cancellable
from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import IngestMessage, IngestRequest, MemoryFilter, MemoryType
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.asgi_lifespan import lifespan
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
        group.start_soon(cancellable, FairLane("memory_ingest", 1, 1), "t1", work)
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


class GatedEmbedder(HashingEmbedder):
    """Embeds once `open` is set: the ingest then writes after its client has gone."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(64)
        self.gate = gate

    def embed_documents(self, texts: list[str]) -> object:  # type: ignore[override]
        assert self.gate.wait(30), "the client's disconnect never reached the app"
        return super().embed_documents(texts)


async def test_a_client_that_closes_the_connection_stops_its_ingest() -> None:
    """Stateless HTTP turns no disconnect into a cancellation: the ingest polls the request for it."""
    import json

    from rearview.api.app import create_app
    from rearview.api.auth import ApiKeyResolver

    delivered = threading.Event()
    clock = ManualClock(T0)
    service = MemoryService(
        InMemoryMemoryStore(clock), InMemoryMemoryIndex(64), GatedEmbedder(delivered), clock
    )
    app = create_app(service, ApiKeyResolver({}, "local"))
    messages = [m.model_dump(mode="json", exclude_none=True) for m in conversation().messages]
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "memory_ingest", "arguments": {"session_id": "long", "messages": messages}},
    }).encode()  # fmt: skip
    sent = False

    async def receive() -> dict[str, object]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        delivered.set()  # every later read learns that the client has gone
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        pass

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8080),
        "headers": [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json"),
                    (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", b"2025-11-25")],
    }  # fmt: skip
    async with lifespan(app):  # the SDK's session manager runs in the app's lifespan
        await app(scope, receive, send)  # type: ignore[arg-type]
    stored = episodes(service)
    assert delivered.is_set() and stored < TURNS, f"{stored} of {TURNS} stored after the client left"
