"""The one place where Rearview errors become MCP tool errors, HTTP statuses and JSON error bodies.

`ERRORS` maps each error class to its kind (the word a client or a model reacts to) and HTTP
status; a subclass inherits its nearest mapped ancestor's row, anything unmapped is
`("error", 500)`. `error_body()` is the only JSON error shape the server writes itself
(`{"error": <kind or code>, "message": <text>}`): auth refusals, the method guard and the
Lambda bridge's own 5xx all use it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import NamedTuple, ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from rearview.errors import (
    AuthenticationError,
    BackendError,
    BusyError,
    ConfigurationError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    NotPermittedError,
    ReadOnlyStorageError,
    RearviewError,
    StorageFullError,
)

P = ParamSpec("P")
R = TypeVar("R")


class ErrorKind(NamedTuple):
    """How one error class is reported: a stable kind word and an HTTP status."""

    kind: str
    status: int


ERRORS: dict[type[RearviewError], ErrorKind] = {
    InvalidInputError: ErrorKind("invalid_input", 400),
    AuthenticationError: ErrorKind("unauthenticated", 401),
    NotFoundError: ErrorKind("not_found", 404),
    ConflictError: ErrorKind("conflict", 409),
    NotPermittedError: ErrorKind("not_permitted", 403),
    BusyError: ErrorKind("busy", 429),
    ConfigurationError: ErrorKind("misconfigured", 500),
    BackendError: ErrorKind("unavailable", 503),
    StorageFullError: ErrorKind("storage_full", 507),
    ReadOnlyStorageError: ErrorKind("read_only", 503),
}
UNMAPPED = ErrorKind("error", 500)


def error_kind(exc: RearviewError) -> ErrorKind:
    """The row of the nearest mapped class in `exc`'s hierarchy (`UNMAPPED` for none)."""
    for cls in type(exc).__mro__:
        if cls in ERRORS:
            return ERRORS[cls]
    return UNMAPPED


def http_status(exc: RearviewError) -> int:
    """HTTP status for an error (500 for anything unmapped)."""
    return error_kind(exc).status


def error_body(code: str, message: str) -> bytes:
    """The JSON body of an error response the server writes itself: `{"error": code, "message": ...}`."""
    return json.dumps({"error": code, "message": message}).encode()


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn RearviewErrors raised by a tool into MCP tool errors (`isError: true`) with a clear message.

    The message starts with the error kind (`invalid_input`, `not_found`, ...) so a model can react.
    """

    @wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RearviewError as exc:
            raise ToolError(f"{error_kind(exc).kind}: {exc}") from exc

    return wrapper
