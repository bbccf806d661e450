"""A request rate per tenant (issue 33.3): over it, 429 with `Retry-After` before the body is read.

Before, nothing bounded how many requests one tenant sent: a flood of its refused searches alone
took another tenant's search p50 x5.8. Now each tenant has a token bucket (`api/tenant_rate.py`),
checked in `TenantAuth` right after the key; other tenants' buckets are never touched.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.fair_share import Fairness
from rearview.api.tenant_rate import BURST, RATE_REFUSAL_HOLD_S, REQUESTS_PER_SECOND, TenantRateLimiter
from rearview.config.settings import Settings, hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_tenant_gets_its_burst_then_its_rate() -> None:
    clock = Clock()
    rate = TenantRateLimiter(per_second=2, burst=3, clock=clock)
    assert [rate.admit("a") for _ in range(4)] == [0, 0, 0, 1]
    assert rate.admit("b") == 0  # another tenant's bucket is its own
    clock.now += 0.5  # one token back
    assert [rate.admit("a"), rate.admit("a")] == [0, 1]
    clock.now += 10  # refilled, never past the burst
    assert [rate.admit("a") for _ in range(4)] == [0, 0, 0, 1]


def test_retry_after_is_the_whole_seconds_until_a_token() -> None:
    clock = Clock()
    rate = TenantRateLimiter(per_second=0.25, burst=1, clock=clock)
    assert (rate.admit("a"), rate.admit("a")) == (0, 4)
    clock.now += 3.5
    assert rate.admit("a") == 1


def test_the_record_is_bounded_and_forgetting_only_admits() -> None:
    clock = Clock()
    rate = TenantRateLimiter(per_second=1, burst=1, max_tenants=2, clock=clock)
    for tenant in ("a", "b", "c"):
        assert rate.admit(tenant) == 0
    assert rate.admit("a") == 0  # dropped as the least recently seen: a full bucket again
    assert rate.admit("c") == 1


def test_settings_bound_the_rate() -> None:
    assert Settings(tenant_requests_per_second=0).tenant_requests_per_second == 0
    with pytest.raises(ValidationError):
        Settings(tenant_requests_per_second=-1)
    with pytest.raises(ValidationError):
        Settings(tenant_request_burst=0)
    assert Fairness(requests_per_second=0).rate() is None


def test_the_settings_default_is_the_documented_rate() -> None:
    """One default: `rearview serve` (the settings) and `create_app`'s own (`Fairness`) agree."""
    defaults = Fairness.from_settings(Settings())
    assert (defaults.requests_per_second, defaults.request_burst) == (REQUESTS_PER_SECOND, BURST)
    assert (Fairness().requests_per_second, Fairness().request_burst) == (REQUESTS_PER_SECOND, BURST)


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient]:
    keys = {hash_key("key-a"): Principal("a"), hash_key("key-b"): Principal("b")}
    fairness = Fairness(requests_per_second=0.01, request_burst=3)
    with TestClient(
        create_app(service, ApiKeyResolver(keys, None), host="0.0.0.0", fairness=fairness)
    ) as client:
        yield client


def test_a_tenant_over_its_rate_gets_429_and_another_tenant_does_not(client: TestClient) -> None:
    def post(key: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        response = client.post(
            "/mcp", content=body, headers={**MCP_HEADERS, "authorization": f"Bearer {key}"}
        )
        return response.status_code, dict(response.headers), response.content

    listing = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    assert [post("key-a", listing)[0] for _ in range(3)] == [200] * 3
    status, headers, body = post("key-a", b"{ not json")  # refused before its body is parsed (else 400)
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert b'"rate_limited"' in body and b"request rate" in body
    assert post("key-b", listing)[0] == 200


def test_serve_holds_a_refusal_over_the_rate_and_lambda_does_not(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood that sends its next call as soon as it is answered gets one refusal per held second."""
    assert Fairness.from_settings(Settings()).rate_refusal_hold_s == RATE_REFUSAL_HOLD_S > 0
    assert Fairness().rate_refusal_hold_s == 0  # Lambda's (`create_app`'s default): billed while held
    held: list[float] = []

    async def sleep(seconds: float) -> None:
        held.append(seconds)

    monkeypatch.setattr("rearview.api.auth.anyio.sleep", sleep)
    keys = {hash_key("key-a"): Principal("a"), hash_key("key-b"): Principal("b")}
    fairness = Fairness(requests_per_second=0.01, request_burst=1, rate_refusal_hold_s=0.5)
    app = create_app(service, ApiKeyResolver(keys, None), host="0.0.0.0", fairness=fairness)
    with TestClient(app) as client:
        statuses = [
            client.post("/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, "authorization": f"Bearer {key}"})
            for key in ("key-a", "key-a", "key-b")
        ]
    assert [r.status_code for r in statuses] == [200, 429, 200]
    assert held == [0.5]  # only the refusal waited: min(hold, Retry-After of 100 s)
