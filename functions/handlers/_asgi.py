"""Serve an ASGI app from Lambda: API Gateway HTTP API (payload 2.0) and Function URL events.

Contract of `AsgiBridge`:

- One bridge per process, built at init. It owns a private asyncio event loop for its whole
  life and enters the app's lifespan on it exactly once (`lifespan.startup` in the constructor,
  `lifespan.shutdown` only in `close()`). Between invocations the loop simply is not running:
  Lambda freezes the process, and every task the lifespan started (the MCP SDK's session
  manager and its task group, which may be started only once per process) is resumed by the
  next invocation's `run_until_complete`. A naive adapter that runs the lifespan per request
  fails on the second call; this one does not. That is why this is not Mangum: it enters and
  exits the lifespan around every invocation (`Mangum.__call__` enters a `LifespanCycle` each time).
- `invoke()` turns one event into one ASGI `http` request and the app's response into the
  proxy-integration result (`statusCode`, `headers`, `cookies`, `body`, `isBase64Encoded`).
  It never waits past `timeout_s`: an app that has not answered by then is cancelled and the
  caller gets 504, and the process stays usable for the next invocation.
- Request bodies arrive decoded from base64 when `isBase64Encoded`; response bodies go back as
  text for textual content types and as base64 otherwise (or when content-encoded).
- Multi-value request headers are kept as API Gateway joined them (comma-separated); `cookies`
  become one `cookie` header; response `set-cookie` headers become `cookies`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Message, Scope

from rearview.api.errors import error_body

__all__ = ["AsgiBridge", "HttpRequest", "HttpResponse", "LifespanError", "UnsupportedEventError"]

log = logging.getLogger(__name__)

TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "+json", "+xml")


class UnsupportedEventError(ValueError):
    """The event is not an HTTP API (payload 2.0) or Function URL request."""


class LifespanError(RuntimeError):
    """The app failed to start (or stop) its lifespan."""


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One HTTP request, as the ASGI app will see it."""

    method: str
    path: str
    raw_path: bytes
    query_string: bytes
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    scheme: str = "https"
    server: tuple[str, int] | None = None
    client: tuple[str, int] | None = None
    request_id: str | None = None

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> HttpRequest:
        """Parse a payload-2.0 event (HTTP API or Function URL).

        Raises UnsupportedEventError, never anything else, for an event of another shape: not an
        object, another payload version, headers that are not an object, cookies that are not a
        list, or a body marked base64 that is not base64.
        """
        context = event.get("requestContext") if isinstance(event, Mapping) else None
        http = context.get("http") if isinstance(context, Mapping) else None
        if not isinstance(context, Mapping) or event.get("version") != "2.0" or not isinstance(http, Mapping):
            raise UnsupportedEventError(
                "expected an API Gateway HTTP API (payload format 2.0) or Function URL event"
            )
        raw_headers = event.get("headers") or {}
        if not isinstance(raw_headers, Mapping):
            raise UnsupportedEventError("event.headers must be an object of header names to values")
        headers = {str(k).lower(): str(v) for k, v in raw_headers.items()}
        cookies = event.get("cookies") or []
        if not isinstance(cookies, list):
            raise UnsupportedEventError("event.cookies must be a list of strings")
        if cookies:
            headers["cookie"] = "; ".join(str(c) for c in cookies)
        raw_path = _strip_stage(str(event.get("rawPath") or http.get("path") or "/"), context.get("stage"))
        payload = _body(event.get("body") or "", bool(event.get("isBase64Encoded")))
        host = headers.get("host") or str(context.get("domainName") or "localhost")
        scheme = headers.get("x-forwarded-proto", "https")
        source_ip = http.get("sourceIp")
        return cls(
            method=str(http.get("method", "GET")).upper(),
            path=unquote(raw_path),
            raw_path=raw_path.encode("latin-1", errors="replace"),
            query_string=str(event.get("rawQueryString") or "").encode("latin-1", errors="replace"),
            headers=tuple(
                (k.encode("latin-1", errors="replace"), v.encode("latin-1", errors="replace"))
                for k, v in headers.items()
            ),
            body=payload,
            scheme=scheme,
            server=_server(host, scheme),
            client=(str(source_ip), 0) if source_ip else None,
            request_id=str(context["requestId"]) if context.get("requestId") else None,
        )

    def scope(self, state: Mapping[str, Any], event: Mapping[str, Any], context: Any) -> Scope:
        """The ASGI `http` scope; `state` is copied so no request sees another's state."""
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": self.scheme,
            "path": self.path,
            "raw_path": self.raw_path,
            "root_path": "",
            "query_string": self.query_string,
            "headers": list(self.headers),
            "server": self.server,
            "client": self.client,
            "state": dict(state),
            "aws.event": event,
            "aws.context": context,
        }


@dataclass(slots=True)
class HttpResponse:
    """What the app answered: status, headers (in order) and the whole body."""

    status: int = 500
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    started: bool = False
    complete: bool = False

    def header(self, name: str) -> str | None:
        """The first value of a header (case-insensitive), if present."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), None)

    def to_proxy_result(self) -> dict[str, Any]:
        """The Lambda proxy-integration result for payload format 2.0 (also Function URLs)."""
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in self.headers:
            if name == "set-cookie":
                cookies.append(value)
            elif name in headers:
                headers[name] = f"{headers[name]},{value}"
            else:
                headers[name] = value
        binary = _is_binary(self.header("content-type"), self.header("content-encoding"))
        body = base64.b64encode(self.body).decode("ascii") if binary else self.body.decode("utf-8")
        result: dict[str, Any] = {
            "statusCode": self.status,
            "headers": headers,
            "body": body,
            "isBase64Encoded": binary,
        }
        if cookies:
            result["cookies"] = cookies
        return result

    @classmethod
    def error(cls, status: int, code: str, message: str) -> HttpResponse:
        """A JSON error response produced by the bridge itself (not by the app)."""
        body = bytearray(error_body(code, message))
        return cls(status, [("content-type", "application/json")], body, started=True, complete=True)


class AsgiBridge:
    """Runs one ASGI app for the life of the process; see the module docstring for the contract."""

    def __init__(self, app: ASGIApp, startup_timeout_s: float = 30.0) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self._state: dict[str, Any] = {}
        self._shutdown = asyncio.Event()
        self._startup: asyncio.Future[None] = self.loop.create_future()
        self._stopped: asyncio.Future[None] = self.loop.create_future()
        self._lifespan_task = self.loop.create_task(self._run_lifespan())
        try:
            self.loop.run_until_complete(asyncio.wait_for(asyncio.shield(self._startup), startup_timeout_s))
        except BaseException:
            self._abandon()
            raise

    @property
    def closed(self) -> bool:
        return self.loop.is_closed()

    def invoke(
        self, request: HttpRequest, event: Mapping[str, Any], context: Any, timeout_s: float
    ) -> HttpResponse:
        """Serve one request: the app's response; 504 after `timeout_s`; 500 if it crashed unanswered."""
        if self.loop.is_closed():
            raise RuntimeError("the bridge is closed")
        scope = request.scope(self._state, event, context)
        return self.loop.run_until_complete(self._serve(scope, request.body, timeout_s))

    def close(self, timeout_s: float = 5.0) -> None:
        """Send `lifespan.shutdown`, wait for it (bounded), and close the loop. Idempotent."""
        if self.loop.is_closed():
            return
        self._shutdown.set()
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(asyncio.wait_for(asyncio.shield(self._stopped), timeout_s))
        self._abandon()

    # ------------------------------------------------------------------------------- internals

    async def _serve(self, scope: Scope, body: bytes, timeout_s: float) -> HttpResponse:
        exchange = _Exchange(body)
        try:
            async with asyncio.timeout(timeout_s):
                await self.app(scope, exchange.receive, exchange.send)
        except TimeoutError:
            if not exchange.response.complete:
                return HttpResponse.error(504, "timeout", "the request did not finish in time")
        except Exception:
            log.exception("the app raised while serving %s %s", scope["method"], scope["path"])
            if not exchange.response.complete:
                return HttpResponse.error(
                    500, "internal_error", "the request failed; see the function's logs"
                )
        finally:
            exchange.done.set()
        if not exchange.response.started:
            return HttpResponse.error(500, "no_response", "the app returned without a response")
        return exchange.response

    async def _run_lifespan(self) -> None:
        started = False

        async def receive() -> Message:
            nonlocal started
            if not started:
                started = True
                return {"type": "lifespan.startup"}
            await self._shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: Message) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.complete":
                _resolve(self._startup)
            elif kind == "lifespan.startup.failed":
                _resolve(self._startup, LifespanError(message.get("message") or "lifespan startup failed"))
            elif kind in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                _resolve(self._stopped)

        scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        scope["state"] = self._state
        try:
            await self.app(scope, receive, send)
        except BaseException as exc:
            _resolve(self._startup, LifespanError(f"lifespan failed: {exc!r}"))
            raise
        finally:
            _resolve(self._startup, LifespanError("the app returned from its lifespan before startup"))
            _resolve(self._stopped)

    def _abandon(self) -> None:
        if self.loop.is_closed():
            return
        if not self._lifespan_task.done():
            self._lifespan_task.cancel()
            with contextlib.suppress(BaseException):
                self.loop.run_until_complete(self._lifespan_task)
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            with contextlib.suppress(BaseException):
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


class _Exchange:
    """The `receive`/`send` pair of one request: the body once, then "disconnect" after the response."""

    def __init__(self, body: bytes) -> None:
        self.response = HttpResponse()
        self.done = asyncio.Event()
        self._body: bytes | None = body

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.done.wait()  # the client "disconnects" only once the response is complete
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        response = self.response
        if message["type"] == "http.response.start":
            response.started = True
            response.status = int(message["status"])
            response.headers = [
                (bytes(k).decode("latin-1").lower(), bytes(v).decode("latin-1"))
                for k, v in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            response.body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                response.complete = True
                self.done.set()


def _resolve(future: asyncio.Future[None], error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def _body(body: object, encoded: bool) -> bytes:
    """The request body's bytes; UnsupportedEventError for a body marked base64 that is not."""
    if not encoded:
        return str(body).encode("utf-8")
    try:
        return base64.b64decode(str(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UnsupportedEventError("event.body is marked isBase64Encoded but is not valid base64") from exc


def _strip_stage(raw_path: str, stage: object) -> str:
    """Drop a named stage's prefix (`/prod/mcp` -> `/mcp`); `$default` has none."""
    if isinstance(stage, str) and stage and stage != "$default":
        prefix = f"/{stage}"
        if raw_path == prefix:
            return "/"
        if raw_path.startswith(prefix + "/"):
            return raw_path[len(prefix) :]
    return raw_path or "/"


def _server(host: str, scheme: str) -> tuple[str, int]:
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    if port.isdigit():
        return name, int(port)
    return host, 443 if scheme == "https" else 80


def _is_binary(content_type: str | None, content_encoding: str | None) -> bool:
    if content_encoding and content_encoding.lower() != "identity":
        return True
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return not (media.startswith("text/") or any(media.endswith(t) or media == t for t in TEXT_TYPES))
