"""Headers on every UI response, and the DNS-rebinding guard of a loopback-bound server.

`SecurityHeaders` adds a strict Content-Security-Policy (no inline script or style, nothing from
another origin, no framing), `nosniff`, no caching and no referrer to another origin to every
response of the UI, error pages and static files included. The referrer policy is `same-origin`,
not `no-referrer`: under `no-referrer` browsers send `Origin: null` with the UI's own form posts
(Fetch, "serializing a request origin"), and the Origin check (`csrf.same_origin`) could then not
tell them from a forged post; `same-origin` still sends nothing to other sites.

`HostGuard` mirrors the MCP transport's DNS-rebinding protection (`mcp.server.transport_security`,
which `create_app` enables for a loopback bind): a loopback-bound server answers only requests
whose `Host` names a loopback address (`127.0.0.1`, `localhost`, `[::1]`, any port), so a page
on another site whose name was rebound to 127.0.0.1 cannot reach it; others get 421.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
_LOOPBACK_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?", re.IGNORECASE)


class SecurityHeaders:
    """ASGI middleware: set `HEADERS` on every HTTP response (replacing any the app set)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        names = {name for name, _ in HEADERS}

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def is_loopback_host(host: str | None) -> bool:
    """Whether a `Host` header names a loopback address, with or without a port."""
    return host is not None and _LOOPBACK_HOST.fullmatch(host) is not None


class HostGuard:
    """ASGI middleware: answer 421 to a request whose `Host` is not loopback (for loopback binds only).

    `public_host` (the configured public URL's `host[:port]`, for a reverse proxy on the same
    machine) is accepted too.
    """

    def __init__(self, app: ASGIApp, public_host: str | None = None) -> None:
        self.app = app
        self.public_host = public_host.lower() if public_host else None

    def allowed(self, host: str | None) -> bool:
        """Whether a request with this `Host` may be served."""
        return is_loopback_host(host) or (host is not None and host.lower() == self.public_host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
            if not self.allowed(host):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 421,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                    }
                )
                await send({"type": "http.response.body", "body": b"Invalid Host header"})
                return
        await self.app(scope, receive, send)
