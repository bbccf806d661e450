"""Key guessing is slowed: after enough refused credentials, an address is refused unchecked for a while.

The limiter with a manual clock, then `/mcp` and the memory browser's login through the whole ASGI
app, which count refusals from one address together.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.refusals import RefusedKeyLimiter, client_address
from rearview.config.settings import Settings, hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_is_refused_after_the_limit_until_its_oldest_refusal_leaves_the_window() -> None:
    clock = Clock()
    limiter = RefusedKeyLimiter(limit=3, window_s=60, clock=clock)
    for _ in range(2):
        limiter.refused("10.0.0.1")
        clock.now += 10
    assert limiter.retry_after("10.0.0.1") == 0  # 2 of 3
    limiter.refused("10.0.0.1")  # t = 1020: the third, the first was at 1000
    assert limiter.retry_after("10.0.0.1") == 40 and limiter.retry_after("10.0.0.2") == 0
    clock.now = 1059.5
    assert limiter.retry_after("10.0.0.1") == 1  # rounded up, never 0 while refused
    clock.now = 1060
    assert limiter.retry_after("10.0.0.1") == 0  # the one at 1000 has left the window


def test_the_record_is_bounded_by_dropping_the_least_recently_refused() -> None:
    limiter = RefusedKeyLimiter(limit=1, window_s=60, max_clients=2, clock=Clock())
    for client in ("a", "b", "c"):
        limiter.refused(client)
    assert [limiter.retry_after(c) > 0 for c in ("a", "b", "c")] == [False, True, True]
    with pytest.raises(ValueError, match="limit"):
        RefusedKeyLimiter(limit=0)


def test_the_address_is_the_peer_unless_forwarded_headers_are_trusted() -> None:
    scope = {"client": ("192.0.2.7", 5000), "headers": [(b"x-forwarded-for", b"203.0.113.9, 10.0.0.1")]}
    assert client_address(scope, proxies=0) == "192.0.2.7"
    assert client_address(scope, proxies=1) == "10.0.0.1"  # what the one trusted proxy appended
    assert client_address(scope, proxies=2) == "203.0.113.9"
    assert client_address(scope, proxies=5) == "203.0.113.9"  # a shorter chain: its leftmost hop
    assert client_address({}, proxies=1) is None


def test_zero_turns_the_limit_off(service: MemoryService) -> None:
    resolver = ApiKeyResolver({hash_key("key-alice-1"): Principal("alice")}, None)
    client = TestClient(create_app(service, resolver, host="0.0.0.0", refusals_per_minute=0))
    headers = {**MCP_HEADERS, "authorization": "Bearer wrong"}
    assert {client.post("/mcp", json=LIST_TOOLS, headers=headers).status_code for _ in range(15)} == {401}
    assert Settings(auth_refusals_per_minute=0).auth_refusals_per_minute == 0
    with pytest.raises(ValidationError):
        Settings(auth_refusals_per_minute=-1)


def test_an_unknown_address_is_never_locked_out() -> None:
    limiter = RefusedKeyLimiter(limit=1, clock=Clock())  # one shared record would lock out everyone
    limiter.refused(None)
    assert limiter.retry_after(None) == 0


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient]:
    """The whole app with its lifespan running (an accepted /mcp call needs the session manager)."""
    resolver = ApiKeyResolver({hash_key("key-alice-1"): Principal("alice")}, None)
    app = create_app(
        service, resolver, host="0.0.0.0", ui=True, ui_secret="a-test-secret-of-enough-length-0123",
        trust_forwarded_headers=True,
    )  # fmt: skip
    with TestClient(app) as client:
        yield client


def _mcp(client: TestClient, key: str, address: str = "198.51.100.1") -> int:
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}", "x-forwarded-for": address}
    return client.post("/mcp", json=LIST_TOOLS, headers=headers).status_code


def test_mcp_answers_429_to_an_address_that_keeps_presenting_wrong_keys(client: TestClient) -> None:
    assert [_mcp(client, f"guess-{i}") for i in range(10)] == [401] * 10
    headers = {**MCP_HEADERS, "authorization": "Bearer key-alice-1", "x-forwarded-for": "198.51.100.1"}
    locked = client.post("/mcp", json=LIST_TOOLS, headers=headers)
    assert locked.status_code == 429  # even the right key: it is not checked while locked out
    assert 1 <= int(locked.headers["retry-after"]) <= 60 and locked.json()["error"] == "rate_limited"
    assert _mcp(client, "key-alice-1", address="198.51.100.2") == 200  # another address
    no_key = client.post("/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, "x-forwarded-for": "198.51.100.1"})
    assert no_key.status_code == 401  # nothing presented: a challenge, not a lockout


def test_the_login_form_and_mcp_count_refusals_together(client: TestClient) -> None:
    address = {"x-forwarded-for": "198.51.100.3"}
    for i in range(5):
        assert _mcp(client, f"guess-{i}", address="198.51.100.3") == 401
    for i in range(5):
        response = client.post("/ui/login", data={"api_key": f"form-{i}"}, headers=address)
        assert response.status_code == 401
    page = client.post("/ui/login", data={"api_key": "key-alice-1"}, headers=address, follow_redirects=False)
    assert page.status_code == 429 and "set-cookie" not in page.headers
    assert "Too many keys were refused" in page.text and int(page.headers["retry-after"]) >= 1
    assert _mcp(client, "key-alice-1", address="198.51.100.3") == 429
