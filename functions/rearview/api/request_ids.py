"""Refuse JSON-RPC bodies the SDK would misread: wrong-typed ids, deep nesting, duplicate keys, batches.

The MCP SDK validates a message against request, notification, response and error in turn; an
`id` of another type (object, array, boolean, null, fraction) fails the request but passes as a
notification, which is answered 202 and never executed, so the client waits for an answer that
never comes. JSON-RPC 2.0 and MCP allow only strings and integers (MCP: never null). Such a POST
gets what the SDK answers for any invalid message: HTTP 400 with a JSON-RPC error, id null
(streamable HTTP: "If the server cannot accept the input, it MUST return an HTTP error status").

A body nested a thousand levels deep made Python's JSON parser raise `RecursionError`, a 500 with
a traceback: it is answered 400 with the parse error (-32700) instead, as any unparsable body is.
No MCP message comes near the limit (an ingest call, the deepest, is about six levels).

A JSON object with a duplicate key at any depth is refused (400, -32600, naming the key): parsers
disagree on which value wins (Python's: the last), so `{"name": "memory_stats", "name":
"memory_write"}` ran a tool a reviewing proxy may not have seen. A body that is JSON but not one
object (a batch, a bare value) is refused with a one-line -32600 where the SDK dumped pydantic's
validation report: no revision served here has batches (`rearview.api.protocol`), and a request
sent with `MCP-Protocol-Version: 2025-03-26` is refused 400 (unsupported protocol version).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.types import UNSUPPORTED_PROTOCOL_VERSION
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rearview.api.protocol import SERVED_VERSIONS, UNSERVED_VERSIONS, shown

INVALID_REQUEST = -32600
INVALID_ID = "Invalid Request: `id` must be a string or an integer"
PARSE_ERROR = -32700
MAX_JSON_DEPTH = 64
TOO_DEEP = f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels"
NOT_ONE_MESSAGE = "Invalid Request: the body must be one JSON-RPC message (a JSON object), never a batch"
SERVED_LIST = ", ".join(SERVED_VERSIONS)

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON `body` nest (brackets inside strings do not count).

    Linear and recursion-free: strings are cut out by one regular expression, then only the
    brackets are walked. For an invalid body the answer is a bound, not an error.
    """
    brackets = _STRINGS.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        depth = depth + 1 if byte in b"[{" else max(0, depth - 1)
        deepest = max(deepest, depth)
    return deepest


def valid_id(value: object) -> bool:
    """A string or an integer (a JSON boolean is not an integer here, although Python says so)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class DuplicateKeyError(ValueError):
    """A JSON object of the body names `key` twice (raised while parsing, caught by the guard)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"Invalid Request: duplicate key {json.dumps(shown(key))} in a JSON object")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads`'s `object_pairs_hook`: the object, or `DuplicateKeyError` for its first repeated key."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


def parse_body(body: bytes) -> object:
    """The JSON value of `body`, every object with unique keys.

    Raises `DuplicateKeyError` for a repeated key at any depth and `ValueError` for a body that is
    not JSON (the SDK answers that one: -32700). Call it only on bodies within `MAX_JSON_DEPTH`.
    """
    return json.loads(body, object_pairs_hook=_unique)


def has_invalid_id(payload: object) -> bool:
    """True when a message of `payload` (one message or a batch) carries an `id` of another type."""
    messages = payload if isinstance(payload, list) else [payload]
    return any(isinstance(m, dict) and "id" in m and not valid_id(m["id"]) for m in messages)


def _message_refusal(payload: object, headers: Headers) -> tuple[int, str] | None:
    """The JSON-RPC error (code, message) a parsed body is refused with, or None to serve it."""
    if has_invalid_id(payload):
        return INVALID_REQUEST, INVALID_ID
    if not isinstance(payload, dict):
        return INVALID_REQUEST, NOT_ONE_MESSAGE
    version = headers.get("mcp-protocol-version")
    if version in UNSERVED_VERSIONS:
        return UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version {version}; served: {SERVED_LIST}"
    return None


class RequestIdGuard:
    """ASGI middleware: answer 400 and a JSON-RPC error to a POST to `path` that is not one good message.

    Refused (see the module docstring): JSON nested too deep (-32700), a duplicate key (-32600), a
    batch or bare value (-32600), an `id` of a wrong type (-32600, id null), and the unserved
    protocol version 2025-03-26 (-32022, the request's id). It reads the whole body first (the SDK
    does too) and hands it on unchanged otherwise; a body that is not JSON is the SDK's to answer.
    """

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body, disconnected = await _read_body(receive)
        if disconnected:  # nobody to answer
            return
        refused = _refused(body, Headers(scope=scope))
        if refused is not None:
            code, message, request_id = refused
            error = {"code": code, "message": message}
            response = JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=400)
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _refused(body: bytes, headers: Headers) -> tuple[int, str, str | int | None] | None:
    """Why `body` is refused (code, message, the id to answer), or None when the SDK may have it."""
    if nesting_depth(body) > MAX_JSON_DEPTH:
        return PARSE_ERROR, TOO_DEEP, None
    try:
        payload = parse_body(body)
    except DuplicateKeyError as exc:
        return INVALID_REQUEST, str(exc), None
    except ValueError:  # not JSON: the SDK's parse error
        return None
    refused = _message_refusal(payload, headers)
    if refused is None:
        return None
    request_id = payload.get("id") if isinstance(payload, dict) else None
    return *refused, request_id if valid_id(request_id) else None


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body, and whether the client disconnected before sending all of it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False
