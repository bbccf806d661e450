"""Waiting out a server's `Retry-After`: the remote client's HTTP transport.

A server with keys answers a tenant over its request rate, or over its connection share, `429`
with `Retry-After` (and a draining server `503`). A bulk writer should slow to the rate, not fail:
`RetryAfterTransport` waits the given seconds and sends the request again, up to `ATTEMPTS` times
and at most `MAX_WAIT_S` a wait; past either it returns the refusal, which the client reports.
Requests are MCP JSON-RPC bodies held in memory, so sending one again is safe; a refused request was
not processed (the rate refuses before the body is read).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2

from rearview.shared.retry import retry_after_s

ATTEMPTS = 5
MAX_WAIT_S = 30.0
RETRIED = frozenset({429, 503})


def retry_after_of(response: httpx2.Response, now: float | None = None) -> float | None:
    """The response's `Retry-After` in seconds (a number or an HTTP date), or None when absent or bad."""
    return retry_after_s(response.headers.get("retry-after"), now)


class RetryAfterTransport(httpx2.AsyncBaseTransport):
    """`inner` (an HTTP transport), with 429/503 + `Retry-After` waited out and sent again."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None, **kwargs: Any) -> None:
        self._inner = inner or httpx2.AsyncHTTPTransport(**kwargs)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        for _ in range(ATTEMPTS - 1):
            response = await self._inner.handle_async_request(request)
            wait = retry_after_of(response) if response.status_code in RETRIED else None
            if wait is None or wait > MAX_WAIT_S:
                return response
            await response.aclose()
            await anyio.sleep(wait)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
