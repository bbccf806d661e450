"""One address cannot hold the server's connections (issue 33.2): a share per address, then global.

Before, uvicorn's connection limit was global only: one client with no key holding 1,000 idle
connections made 92 % of another tenant's requests 503. Here a real uvicorn server runs with the
options `rearview serve` passes (`http_limits.server_options`, small limits), and clients connect
from distinct loopback addresses (127.0.0.x, bound as the source address).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
import uvicorn

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.http_limits import Limits, address_key, server_options
from rearview.principal import Principal
from rearview.service.memory_service import MemoryService
from rearview.settings import Settings, hash_key
from tests.e2e.server import free_port

LIMITS = Limits(head_s=60.0, max_connections=40, per_address=8, unauthenticated_per_address=4)
KEY = "key-tenant-b"
LIST_TOOLS = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def port(service: MemoryService) -> Iterator[int]:
    app = create_app(service, ApiKeyResolver({hash_key(KEY): Principal("tenant-b")}, None))
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


def _idle(stack: ExitStack, port: int, source: str) -> socket.socket:
    """A connection from `source` that sends nothing."""
    sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), source_address=(source, 0)))
    sock.settimeout(5)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """What the server sent unasked (b"" when nothing came within the socket's timeout)."""
    try:
        return sock.recv(4096)
    except TimeoutError:
        return b""


def _keyed_request(sock: socket.socket, port: int) -> bytes:
    """An authenticated `tools/list` on a kept-alive connection; the response's status line."""
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {KEY}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(LIST_TOOLS)}\r\n\r\n".encode()
        + LIST_TOOLS
    )
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, body = received.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":")[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:  # read the whole response: the next one starts clean
        body += sock.recv(65536)
    return head.split(b"\r\n", 1)[0]


def test_one_address_holding_idle_connections_does_not_refuse_another(port: int) -> None:
    with ExitStack() as stack:
        idle = [_idle(stack, port, "127.0.0.2") for _ in range(60)]  # more than the server's 40
        with httpx.Client(headers={**HEADERS, "authorization": f"Bearer {KEY}"}) as client:
            statuses = [
                client.post(f"http://127.0.0.1:{port}/mcp", content=LIST_TOOLS).status_code for _ in range(5)
            ]
        fresh = [httpx.post(f"http://127.0.0.1:{port}/mcp", content=LIST_TOOLS,
                            headers={**HEADERS, "authorization": f"Bearer {KEY}"}).status_code
                 for _ in range(5)]  # fmt: skip
        assert statuses == [200] * 5 and fresh == [200] * 5
        refused = [_answer(sock) for sock in idle[LIMITS.unauthenticated_per_address :]]
    assert all(answer.startswith(b"HTTP/1.1 429 ") for answer in refused), refused[:2]
    assert b"too_many_connections" in refused[0] and b"retry-after: 1" in refused[0].lower()


def test_an_address_holds_more_authenticated_connections_than_silent_ones(port: int) -> None:
    with ExitStack() as stack:
        keyed = []
        for _ in range(LIMITS.per_address):  # each carries an authenticated request before the next opens
            keyed.append(_idle(stack, port, "127.0.0.3"))
            assert _keyed_request(keyed[-1], port) == b"HTTP/1.1 200 OK"
        one_more = _idle(stack, port, "127.0.0.3")
        assert _answer(one_more).startswith(b"HTTP/1.1 429 ")
        assert _keyed_request(keyed[0], port) == b"HTTP/1.1 200 OK"  # those held keep working
        other = _idle(stack, port, "127.0.0.4")
        assert _keyed_request(other, port) == b"HTTP/1.1 200 OK"


def test_silent_connections_of_many_addresses_get_half_the_server(port: int) -> None:
    with ExitStack() as stack:
        keyed = _idle(stack, port, "127.0.0.1")
        assert _keyed_request(keyed, port) == b"HTTP/1.1 200 OK"
        for n in range(LIMITS.unauthenticated // LIMITS.unauthenticated_per_address):
            for _ in range(LIMITS.unauthenticated_per_address):
                _idle(stack, port, f"127.0.1.{n + 1}")
        time.sleep(0.2)  # the server has accepted them all
        refused = _idle(stack, port, "127.0.2.1")
        assert _answer(refused).startswith(b"HTTP/1.1 503 ")
        assert _keyed_request(keyed, port) == b"HTTP/1.1 200 OK"  # an authenticated one still works


def test_an_ipv6_address_shares_its_64() -> None:
    assert address_key("2001:db8::1") == address_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert address_key("10.0.0.1") == "10.0.0.1"


def test_the_share_comes_from_settings_and_is_off_behind_a_trusted_proxy() -> None:
    assert Limits.from_settings(Settings()) == Limits(per_address=64, unauthenticated_per_address=32)
    assert Limits.from_settings(Settings(connections_per_address=10)).unauthenticated_per_address == 5
    assert Limits.from_settings(Settings(trust_forwarded_headers=True)).per_address == 0
    assert server_options(Limits(per_address=0))["http"].ledger is None
    assert server_options()["http"].ledger is not None
