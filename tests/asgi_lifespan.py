"""Run an ASGI app's lifespan around a block, for tests that call the app in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.types import ASGIApp, Message


@asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run `app`'s ASGI lifespan (the SDK's session manager) around the block."""
    to_app, app_inbox = anyio.create_memory_object_stream[Message](2)
    app_outbox, from_app = anyio.create_memory_object_stream[Message](2)

    async def send(message: Message) -> None:
        await app_outbox.send(message)

    async def run() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, app_inbox.receive, send)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await to_app.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        yield
        await to_app.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
