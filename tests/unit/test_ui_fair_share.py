"""The memory browser shares its tenant's fair share with `/mcp` (issue 45.1).

Before, `/ui` was served outside `TenantAuth` and its service calls ran in anyio's shared thread
pool: no request rate applied, and a tenant's browser searches ran outside the search lane and
`Courtesy`, so 16 threads of `GET /ui/search` raised another tenant's `/mcp` search p95 25-fold.
Here the app is the real one (`create_app`); the lanes it builds are captured to read their counts
while the browser's service calls run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from rearview.api import tools
from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.fair_share import FairLane, Fairness
from rearview.config.settings import hash_key
from rearview.models import WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from rearview.ui.app import build_ui
from rearview.ui.browser import UiConfig
from rearview.ui.session import SessionCodec
from rearview.ui.tenant_share import TenantShare

SECRET = "a-test-secret-of-enough-length-0123"
KEYS = {"key-alice": Principal("alice"), "key-bob": Principal("bob")}
LIST_TOOLS = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _app(service: MemoryService, fairness: Fairness) -> Any:
    resolver = ApiKeyResolver({hash_key(k): p for k, p in KEYS.items()}, None)
    return create_app(service, resolver, host="0.0.0.0", ui=True, ui_secret=SECRET, fairness=fairness)


def _signed_in(client: TestClient, key: str) -> TestClient:
    assert client.post("/ui/login", data={"api_key": key}, follow_redirects=False).status_code == 303
    return client


def _mcp(client: TestClient, key: str) -> int:
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}"}
    return client.post("/mcp", content=LIST_TOOLS, headers=headers).status_code


def test_browser_pages_take_from_the_tenants_request_rate_shared_with_mcp(service: MemoryService) -> None:
    app = _app(service, Fairness(requests_per_second=0.001, request_burst=3))
    with TestClient(app) as client:  # the lifespan runs /mcp's session manager
        _check_shared_rate(app, _signed_in(client, "key-alice"))


def _check_shared_rate(app: Any, alice: TestClient) -> None:
    assert alice.get("/ui/search", params={"q": "tea"}).status_code == 200
    assert alice.get("/ui/memories").status_code == 200  # three service calls, one request
    assert _mcp(alice, "key-alice") == 200  # the burst of 3 is spent, by the browser and /mcp together
    refused = alice.get("/ui/search", params={"q": "tea"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "Too many requests" in refused.text
    assert _mcp(alice, "key-alice") == 429
    bob = _signed_in(TestClient(app), "key-bob")  # another tenant's bucket is its own
    assert bob.get("/ui/search", params={"q": "tea"}).status_code == 200


def test_browser_calls_run_in_the_tenants_lanes_as_its_visits(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tools.Lanes] = []
    real_build = tools.Lanes.build

    def capture(*args: Any, **kwargs: Any) -> tools.Lanes:
        built.append(real_build(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(tools.Lanes, "build", capture)
    app = _app(service, Fairness())
    assert len(built) == 1, "one set of lanes for /mcp and the browser"
    lanes = built[0]
    seen: dict[str, tuple[int, int, int]] = {}

    def watched(name: str) -> None:
        real: Callable[..., Any] = getattr(service, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            seen[name] = (
                lanes.search.running("alice"),
                lanes.writes.running("alice"),
                lanes.search.courtesy.demand["alice"],
            )
            return real(*args, **kwargs)

        monkeypatch.setattr(service, name, call)

    for name in ("search", "browse", "stats", "due_for_archival", "history", "strength_history", "get"):
        watched(name)
    memory_id = service.write("alice", WriteRequest(content="Alice drinks green tea every morning")).memory.id
    alice = _signed_in(TestClient(app), "key-alice")
    assert alice.get("/ui/search", params={"q": "tea"}).status_code == 200
    assert alice.get("/ui/memories").status_code == 200
    assert alice.get(f"/ui/memories/{memory_id}").status_code == 200
    # searches in the search lane, every other call in the write lane; the request is one visit
    assert seen["search"] == (1, 0, 1)
    for name in ("browse", "stats", "due_for_archival", "history", "strength_history"):
        assert seen[name] == (0, 1, 1), name
    assert lanes.search.courtesy.demand["alice"] == 0  # every visit left


async def test_a_browser_call_past_the_tenants_lane_share_is_answered_busy(service: MemoryService) -> None:
    def lane(kind: str) -> FairLane:
        return FairLane(kind, width=1, per_tenant=1, max_waiting=0)

    lanes = tools.Lanes(lane("search"), lane("write"), lane("memory_ingest"))
    config = UiConfig(ApiKeyResolver({}, "alice"), SessionCodec(SECRET), share=TenantShare(lanes))
    app = build_ui(service, config, loopback=False)  # open mode: every page is the tenant alice's
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client:
        async with lanes.writes.turn("alice"):  # the tenant's one write-lane slot is taken
            busy = await client.get("/ui/memories")
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert "Busy:" in busy.text
        assert (await client.get("/ui/memories")).status_code == 200  # the slot is free again
