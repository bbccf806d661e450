"""One structured access-log line per HTTP request, for `rearview serve` and the Lambda handler alike.

`AccessLog` is pure ASGI middleware on the outside of the app. Per request it logs, on the
`rearview.access` logger at INFO, the message `request` with these record attributes (`FIELDS`):

| field | value |
|---|---|
| `method`, `path` | the HTTP method and path |
| `mcp_method` | the JSON-RPC method of a single-message POST body (`tools/call`, `server/discover`, ...) |
| `mcp_tool` | for `tools/call`, the tool's name |
| `status` | the HTTP status answered (500 when the app raised) |
| `elapsed_ms` | wall time to the end of the response |
| `tenant_hash` | the first 12 hex digits of the SHA-256 of the authenticated tenant id (absent before auth) |

Never logged: bodies, arguments, results, credentials, the tenant id itself. The formatting is the
host's: the Lambda handler gives this logger Powertools' JSON formatter (fields become keys next
to the correlation id); `rearview serve` installs `KeyValueFormatter` (`install_console_handler`).

`quiet_library_loggers` raises the MCP SDK's, botocore's and opensearch-py's loggers to WARNING:
at INFO they log a line per request ("Terminating session: None" from the stateless transport,
every OpenSearch call) and tool failures with their arguments, which would leak content.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "ACCESS_LOGGER",
    "FIELDS",
    "AccessLog",
    "KeyValueFormatter",
    "RpcCall",
    "install_console_handler",
    "quiet_library_loggers",
    "rpc_call",
    "tenant_hash",
]

ACCESS_LOGGER = logging.getLogger("rearview.access")
FIELDS = ("method", "path", "mcp_method", "mcp_tool", "status", "elapsed_ms", "tenant_hash")
LIBRARY_LOGGERS = ("mcp", "botocore", "opensearch")
"""Loggers kept at WARNING: their INFO lines are per-request noise (the MCP SDK's also carry tool
arguments; opensearch-py logs every HTTP call; botocore where it found credentials/endpoints)."""
MAX_INSPECTED_BODY = 1 << 20
"""Bodies longer than this are not parsed for the JSON-RPC method (the request still is logged)."""


@dataclass(frozen=True, slots=True)
class RpcCall:
    """The JSON-RPC method of a request body and, for `tools/call`, the tool's name."""

    method: str | None = None
    tool: str | None = None
    request_id: str | int | None = None


def rpc_call(body: bytes) -> RpcCall:
    """What a POST body asks for; an empty `RpcCall` when it is not one JSON-RPC message."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        return RpcCall()
    if not isinstance(message, Mapping) or not isinstance(message.get("method"), str):
        return RpcCall()
    method = str(message["method"])
    params = message.get("params")
    tool = params.get("name") if method == "tools/call" and isinstance(params, Mapping) else None
    request_id = message.get("id")
    return RpcCall(
        method=method,
        tool=tool if isinstance(tool, str) else None,
        request_id=request_id if isinstance(request_id, str | int) else None,
    )


def tenant_hash(tenant_id: str) -> str:
    """A stable, non-reversible tag for a tenant: enough to group its requests, not to name it."""
    return hashlib.sha256(tenant_id.encode("utf-8")).hexdigest()[:12]


class AccessLog:
    """ASGI middleware: log one `request` line per HTTP request after its response has been sent."""

    def __init__(self, app: ASGIApp, logger: logging.Logger = ACCESS_LOGGER) -> None:
        self.app = app
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        status = 500  # what the client gets when the app raises before answering

        async def recording_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(body) <= MAX_INSPECTED_BODY:
                body.extend(message.get("body", b""))
            return message

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        started = time.perf_counter()
        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            self.logger.info("request", extra=_fields(scope, bytes(body), status, started))


def _fields(scope: Scope, body: bytes, status: int, started: float) -> dict[str, Any]:
    call = rpc_call(body) if scope["method"] == "POST" and len(body) <= MAX_INSPECTED_BODY else RpcCall()
    tenant = scope.get("state", {}).get("tenant_id")
    fields: dict[str, Any] = {
        "method": scope["method"],
        "path": scope["path"],
        "mcp_method": call.method,
        "mcp_tool": call.tool,
        "status": status,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
        "tenant_hash": tenant_hash(tenant) if isinstance(tenant, str) else None,
    }
    return {key: value for key, value in fields.items() if value is not None}


class KeyValueFormatter(logging.Formatter):
    """`<UTC time> <message> key=value ...` over the `FIELDS` a record carries (`rearview serve`)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(message)s", datefmt="%Y-%m-%dT%H:%M:%S%z")
        self.converter = time.gmtime

    def format(self, record: logging.LogRecord) -> str:
        pairs = [f"{key}={getattr(record, key)}" for key in FIELDS if hasattr(record, key)]
        return " ".join([super().format(record), *pairs])


def install_console_handler(stream: TextIO | None = None) -> logging.Handler:
    """Print access lines as key=value to `stream` (stderr); idempotent per logger. Returns the handler."""
    for handler in ACCESS_LOGGER.handlers:
        if isinstance(handler.formatter, KeyValueFormatter):
            return handler
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    ACCESS_LOGGER.addHandler(handler)
    ACCESS_LOGGER.setLevel(logging.INFO)
    ACCESS_LOGGER.propagate = False  # printed once, here, whatever the root logger is configured to do
    return handler


def quiet_library_loggers() -> None:
    """Keep `LIBRARY_LOGGERS` at WARNING (see the module docstring)."""
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
