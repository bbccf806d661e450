"""The one place where Rearview errors become MCP tool errors and HTTP statuses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from rearview.errors import (
    AuthenticationError,
    BackendError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RearviewError,
)

P = ParamSpec("P")
R = TypeVar("R")

HTTP_STATUS: dict[type[RearviewError], int] = {
    InvalidInputError: 400,
    AuthenticationError: 401,
    NotFoundError: 404,
    ConflictError: 409,
    BackendError: 503,
}


def http_status(exc: RearviewError) -> int:
    """HTTP status for an error (500 for anything unmapped)."""
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 500


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn RearviewErrors raised by a tool into MCP tool errors (`isError: true`) with a clear message.

    The message starts with the error kind (`invalid_input`, `not_found`, ...) so a model can react.
    """

    @wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except RearviewError as exc:
            raise ToolError(f"{_kind(exc)}: {exc}") from exc

    return wrapper


def _kind(exc: RearviewError) -> str:
    names = {
        400: "invalid_input",
        401: "unauthenticated",
        404: "not_found",
        409: "conflict",
        503: "unavailable",
    }
    return names.get(http_status(exc), "error")
