"""Slow and idle clients are cut off (issue 24, Low): `rearview serve`'s HTTP limits.

Before, uvicorn ran with its defaults: a socket that connected and sent nothing, or a request head
or body trickling in, was held forever. Here a real uvicorn server runs with the options `rearview
serve` passes (`http_limits.server_options`, with short limits) on a raw TCP socket.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.http_limits import Limits, server_options
from rearview.service.memory_service import MemoryService
from tests.e2e.server import free_port

LIMITS = Limits(head_s=1.0, idle_s=1.0)


@pytest.fixture
def port(service: MemoryService) -> Iterator[int]:
    app = create_app(service, ApiKeyResolver({}, "local"), body_timeout_s=1.0)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **server_options(LIMITS))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing the connection; fails if it is still open after `seconds`."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        pytest.fail(f"the connection was still open after {seconds} s")
    return received


def test_a_silent_connection_is_closed(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        assert _closed_within(sock, 5) == b""


def test_a_trickling_request_head_is_closed(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        with pytest.raises(OSError):  # reset or broken pipe once the server has closed it
            for i in range(40):
                sock.sendall(f"X-Slow-{i}: a\r\n".encode())
                time.sleep(0.2)
        assert time.monotonic() - started < 5


def test_a_trickling_body_is_408(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"'
        )
        answer = _closed_within(sock, 5)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"request_timeout" in answer


def test_an_idle_kept_alive_connection_is_closed(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = _closed_within(sock, 5)
    assert answer.startswith(b"HTTP/1.1 200 ")
