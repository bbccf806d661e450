"""Refuse JSON-RPC messages with an `id` of a wrong type, and bodies nested too deep to parse.

The MCP SDK validates a message against request, notification, response and error in turn; an
`id` of another type (object, array, boolean, null, fraction) fails the request but passes as a
notification, which is answered 202 and never executed, so the client waits for an answer that
never comes. JSON-RPC 2.0 and MCP allow only strings and integers (MCP: never null). Such a POST
gets what the SDK answers for any invalid message: HTTP 400 with a JSON-RPC error, id null
(streamable HTTP: "If the server cannot accept the input, it MUST return an HTTP error status").

A body nested a thousand levels deep made Python's JSON parser raise `RecursionError`, a 500 with
a traceback: it is answered 400 with the parse error (-32700) instead, as any unparsable body is.
No MCP message comes near the limit (an ingest call, the deepest, is about six levels).
"""

from __future__ import annotations

import json
import re

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

INVALID_REQUEST = -32600
INVALID_ID = "Invalid Request: `id` must be a string or an integer"
PARSE_ERROR = -32700
MAX_JSON_DEPTH = 64
TOO_DEEP = f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels"

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


def has_invalid_id(body: bytes) -> bool:
    """True when a message of `body` (one message or a batch) carries an `id` of another type.

    A body that is not JSON is left to the SDK (it answers -32700).
    """
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    messages = payload if isinstance(payload, list) else [payload]
    return any(isinstance(m, dict) and "id" in m and not valid_id(m["id"]) for m in messages)


class RequestIdGuard:
    """ASGI middleware: answer a POST to `path` whose message has an invalid `id` with 400 (-32600).

    It reads the whole body first (the SDK does too) and hands it on unchanged otherwise.
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
        if nesting_depth(body) > MAX_JSON_DEPTH:
            error = {"code": PARSE_ERROR, "message": TOO_DEEP}
            response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
            await response(scope, receive, send)
            return
        if has_invalid_id(body):
            error = {"code": INVALID_REQUEST, "message": INVALID_ID}
            response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
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
