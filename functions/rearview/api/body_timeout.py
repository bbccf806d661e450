"""`BodyTimeout`: a request's body must arrive in time (`rearview.api.http_limits` has the whole picture).

Kept apart from the uvicorn-specific limits: the app carries this one everywhere, Lambda included
(where API Gateway has buffered the body, so it never fires), and uvicorn is not in that bundle.
"""

from __future__ import annotations

import time

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rearview.api.errors import error_body

__all__ = ["BODY_TIMEOUT_S", "BodyTimeout"]

BODY_TIMEOUT_S = 30.0


class _BodyTimeoutError(Exception):
    """The request body did not arrive within the limit."""


class BodyTimeout:
    """ASGI middleware: an HTTP request's body must arrive within `body_s` of its first read, else 408."""

    def __init__(self, app: ASGIApp, body_s: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.body_s = body_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline: float | None = None
        body_done = False
        started = False

        async def timed_receive() -> Message:
            nonlocal deadline, body_done
            if body_done:  # afterwards the app only waits for a disconnect: no limit on that
                return await receive()
            if deadline is None:
                deadline = time.monotonic() + self.body_s
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError as exc:
                raise _BodyTimeoutError from exc
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracked_send)
        except _BodyTimeoutError:
            if started:
                raise
            message = f"the request body did not arrive within {self.body_s:g} s"
            await send(
                {
                    "type": "http.response.start",
                    "status": 408,
                    "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
                }
            )
            await send({"type": "http.response.body", "body": error_body("request_timeout", message)})
