"""No client holds the server's connections: shares per address, per network and per tenant.

Issue 33.2: uvicorn's connection limit was global only, and one client with no key holding 1,000
idle connections made 92 % of another tenant's requests 503. Issue 45.2: with a share per address,
17 addresses x 32 silent sockets filled the server's unauthenticated share, and 96 % of other
tenants' requests, each unauthenticated when its connection arrives, got 503; tenants behind one
NAT shared one address's connections. Here a real uvicorn server runs with the options `rearview
serve` passes (`http_limits.server_options`, small limits), and clients connect from distinct
loopback addresses (127.x.y.z, bound as the source address: Linux routes all of 127/8 to
loopback); the ledger's policy is also tested alone, with made-up addresses.
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
from rearview.api.http_limits import ConnectionLedger, Limits, address_key, network_key, server_options
from rearview.config.settings import Settings, hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from tests.e2e.server import free_port

LIMITS = Limits(
    head_s=60.0,
    pressured_head_s=60.0,
    max_connections=40,
    per_address=8,
    unauthenticated_per_address=4,
    unauthenticated_per_network=8,
)
KEY = "key-tenant-b"
OTHER_KEY = "key-tenant-c"
LIST_TOOLS = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def port(service: MemoryService) -> Iterator[int]:
    keys = {hash_key(KEY): Principal("tenant-b"), hash_key(OTHER_KEY): Principal("tenant-c")}
    app = create_app(service, ApiKeyResolver(keys, None))
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


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed `sock` (within its timeout) having sent nothing more."""
    try:
        return sock.recv(4096) == b""
    except TimeoutError:
        return False


def _keyed_request(sock: socket.socket, port: int, key: str = KEY) -> bytes:
    """An authenticated `tools/list` on a kept-alive connection; the response's status line."""
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
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


def test_each_tenant_holds_its_own_share_of_an_address(port: int) -> None:
    with ExitStack() as stack:
        keyed = []
        for _ in range(LIMITS.per_address):  # each carries an authenticated request before the next opens
            keyed.append(_idle(stack, port, "127.0.0.3"))
            assert _keyed_request(keyed[-1], port) == b"HTTP/1.1 200 OK"
        one_more = _idle(stack, port, "127.0.0.3")
        assert _keyed_request(one_more, port) == b"HTTP/1.1 200 OK"  # served, then closed: past the share
        assert _closed_by_server(one_more)
        assert _keyed_request(keyed[0], port) == b"HTTP/1.1 200 OK"  # those held keep working
        behind_the_same_nat = _idle(stack, port, "127.0.0.3")  # another tenant: a share of its own
        assert _keyed_request(behind_the_same_nat, port, OTHER_KEY) == b"HTTP/1.1 200 OK"
        assert _keyed_request(behind_the_same_nat, port, OTHER_KEY) == b"HTTP/1.1 200 OK"
        silent = [_idle(stack, port, "127.0.0.3") for _ in range(LIMITS.unauthenticated_per_address)]
        assert _keyed_request(silent[0], port) == b"HTTP/1.1 200 OK"  # keyed ones leave the silent share


def test_silent_connections_of_many_addresses_leave_room_for_a_newcomer(port: int) -> None:
    """The server's unauthenticated share is full of silent sockets: a newcomer still gets in."""
    with ExitStack() as stack:
        keyed = _idle(stack, port, "127.0.0.1")
        assert _keyed_request(keyed, port) == b"HTTP/1.1 200 OK"
        flood = []
        for network in range(1, 4 * LIMITS.unauthenticated // LIMITS.unauthenticated_per_address + 1):
            for _ in range(LIMITS.unauthenticated_per_address):  # each from an address of its own network
                flood.append(_idle(stack, port, f"127.1.{network}.1"))
        time.sleep(0.2)  # the server has accepted them all
        for n in range(1, 6):
            newcomer = _idle(stack, port, f"127.2.{n}.1")
            assert _keyed_request(newcomer, port) == b"HTTP/1.1 200 OK"
        assert _keyed_request(keyed, port) == b"HTTP/1.1 200 OK"  # an authenticated one still works
        for sock in flood:
            sock.settimeout(0.2)
        closed = sum(_closed_by_server(sock) for sock in flood)
        # the flood holds the share, never more; the first newcomer took one silent socket's place, and
        # once it had authenticated it left the share, and the next newcomer took its place, and so on
        assert closed == len(flood) - LIMITS.unauthenticated + 1


def test_a_network_holds_a_few_addresses_share_of_silent_connections(port: int) -> None:
    with ExitStack() as stack:
        for host in range(1, 3):
            for _ in range(LIMITS.unauthenticated_per_address):
                _idle(stack, port, f"127.3.0.{host}")
        refused = _idle(stack, port, "127.3.0.9")  # a third address of the same /24
        answer = _answer(refused)
        assert answer.startswith(b"HTTP/1.1 429 ") and b"127.3.0.0/24" in answer
        assert _keyed_request(_idle(stack, port, "127.3.1.1"), port) == b"HTTP/1.1 200 OK"


class FakeConnection:
    """A connection as the ledger sees it; `waiting_for_head` False: a request is in flight."""

    def __init__(self, waiting_for_head: bool = True) -> None:
        self.waiting_for_head = waiting_for_head
        self.evicted = False

    def evict(self) -> None:
        self.evicted = True


def test_the_ledger_evicts_the_oldest_silent_connection_of_the_busiest_network() -> None:
    ledger = ConnectionLedger(Limits(max_connections=12, unauthenticated_per_address=3))  # 6 unauthenticated
    lone = FakeConnection()
    assert ledger.admit(lone, "198.51.100.1") is None  # first, and alone in its network
    busy = [FakeConnection(waiting_for_head=False)] + [FakeConnection() for _ in range(4)]
    for n, connection in enumerate(busy):
        assert ledger.admit(connection, f"203.0.113.{n % 2 + 1}") is None
    newcomer = FakeConnection()
    assert ledger.admit(newcomer, "192.0.2.7") is None  # full: one of the busiest network's makes room
    assert [c.evicted for c in busy] == [False, True, False, False, False]  # [0] has a request in flight
    assert not lone.evicted and ledger.unauthenticated() == 6
    ledger.release(busy[1])  # its close arrives later: nothing left to forget
    assert ledger.unauthenticated() == 6


def test_the_ledger_refuses_only_when_no_connection_waits_for_a_head() -> None:
    ledger = ConnectionLedger(Limits(max_connections=4, unauthenticated_per_address=3))
    for n in range(2):
        assert ledger.admit(FakeConnection(waiting_for_head=False), f"10.0.{n}.1") is None
    refused = ledger.admit(FakeConnection(), "10.0.9.1")
    assert refused is not None and refused[0] == 503


def test_the_ledger_counts_by_address_and_network_and_keyed_ones_by_tenant() -> None:
    ledger = ConnectionLedger(
        Limits(per_address=2, unauthenticated_per_address=2, unauthenticated_per_network=3)
    )
    a = [FakeConnection() for _ in range(3)]
    assert ledger.admit(a[0], "10.1.1.1") is None and ledger.admit(a[1], "10.1.1.1") is None
    assert ledger.admit(a[2], "10.1.1.1") == (
        429, "this address already holds 2 connections that have not authenticated"
    )  # fmt: skip
    assert ledger.admit(FakeConnection(), "10.1.1.2") is None
    refused = ledger.admit(FakeConnection(), "10.1.1.3")
    assert refused is not None and refused[0] == 429 and "10.1.1.0/24" in refused[1]
    assert ledger.admit(FakeConnection(), "2001:db8:1:2::1") is None
    assert ledger.authenticated(a[0], "tenant-b") and ledger.authenticated(a[1], "tenant-b")
    assert ledger.holding("10.1.1.1") == 0 and ledger.keyed("tenant-b", "10.1.1.1") == 2
    assert ledger.admit(a[2], "10.1.1.1") is None  # the address's silent share is free again
    third = FakeConnection()
    assert ledger.admit(third, "10.1.1.1") is None
    assert not ledger.authenticated(third, "tenant-b")  # past the tenant's share: close after serving
    assert ledger.authenticated(a[2], "tenant-c")  # another tenant behind the same address
    ledger.release(a[0])
    ledger.release(a[0])
    assert ledger.keyed("tenant-b", "10.1.1.1") == 2  # `third` is still open


def test_the_head_timeout_shortens_while_the_unauthenticated_share_is_half_full() -> None:
    ledger = ConnectionLedger(
        Limits(head_s=10.0, pressured_head_s=2.0, max_connections=8)
    )  # 4 unauthenticated
    assert ledger.admit(FakeConnection(), "10.0.0.1") is None
    assert ledger.head_timeout() == 10.0
    assert ledger.admit(FakeConnection(), "10.0.1.1") is None
    assert ledger.head_timeout() == 2.0


def test_an_ipv6_address_shares_its_64_and_a_network_its_48() -> None:
    assert address_key("2001:db8::1") == address_key("2001:db8::ffff:1") == "2001:db8::/64"
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert address_key("10.0.0.1") == "10.0.0.1"
    assert network_key("10.0.0.1") == network_key("::ffff:10.0.0.200") == "10.0.0.0/24"
    assert network_key("2001:db8:0:1::1") == network_key("2001:db8:0:ffff::1") == "2001:db8::/48"


def test_the_share_comes_from_settings_and_is_off_behind_a_trusted_proxy() -> None:
    assert Limits.from_settings(Settings()) == Limits(
        per_address=64, unauthenticated_per_address=32, unauthenticated_per_network=128
    )
    assert Limits.from_settings(Settings(connections_per_address=10)).unauthenticated_per_address == 5
    assert Limits.from_settings(Settings(connections_per_address=10)).unauthenticated_per_network == 20
    assert Limits.from_settings(Settings(trust_forwarded_headers=True)).per_address == 0
    assert server_options(Limits(per_address=0))["http"].ledger is None
    assert server_options()["http"].ledger is not None
