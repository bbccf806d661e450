"""The access-log middleware on its own: what `rearview serve` prints, and a failing app's line."""

from __future__ import annotations

import io
import logging

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from rearview.api.access_log import ACCESS_LOGGER, AccessLog, install_console_handler


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the body, answers 202 (or raises for /boom)."""
    await receive()
    if scope["path"] == "/boom":
        raise RuntimeError("boom")
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def test_serve_prints_one_key_value_line_per_request() -> None:
    stream = io.StringIO()
    handler = install_console_handler(stream)
    try:
        assert install_console_handler(stream) is handler  # idempotent: no doubled lines
        transport = httpx.ASGITransport(AccessLog(echo_app))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_get"}}
            await http.post("/mcp", json=body)
    finally:
        ACCESS_LOGGER.removeHandler(handler)
        ACCESS_LOGGER.propagate = True
    (line,) = stream.getvalue().splitlines()
    assert (
        " request method=POST path=/mcp mcp_method=tools/call mcp_tool=memory_get status=202 elapsed_ms="
        in line
    )
    assert line[:4].isdigit() and "tenant_hash" not in line  # UTC timestamp first; no tenant without auth


async def test_a_failing_app_is_logged_as_500(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER.name)
    transport = httpx.ASGITransport(AccessLog(echo_app))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        with pytest.raises(RuntimeError):
            await http.post("/boom", content=b"not json")
    (record,) = caplog.records
    assert (vars(record)["status"], vars(record)["path"], "mcp_method" in vars(record)) == (
        500,
        "/boom",
        False,
    )
