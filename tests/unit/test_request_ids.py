"""JSON-RPC ids that are neither strings nor integers are refused (400, -32600), not dropped as notifications."""

from __future__ import annotations

import httpx

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.config.settings import hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal

HEADERS = {"accept": "application/json, text/event-stream", "authorization": "Bearer sk-a"}


def client(service: MemoryService) -> httpx.AsyncClient:
    app = create_app(service, ApiKeyResolver({hash_key("sk-a"): Principal("t1")}, None), host="0.0.0.0")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver")


async def test_a_batch_holding_one_invalid_id_is_refused_whole(service: MemoryService) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": {"nested": 1}, "method": "tools/list"},
    ]
    async with client(service) as http:
        refused = await http.post("/mcp", json=batch, headers=HEADERS)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == -32600 and refused.json()["id"] is None


async def test_the_key_is_checked_before_the_body_is_read(service: MemoryService) -> None:
    message = {"jsonrpc": "2.0", "id": False, "method": "tools/list"}
    async with client(service) as http:
        denied = await http.post("/mcp", json=message, headers={"accept": HEADERS["accept"]})
    assert denied.status_code == 401
