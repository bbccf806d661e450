"""Protected-resource metadata (RFC 9728) as an OAuth client discovers it."""

from __future__ import annotations

import httpx

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.service.memory_service import MemoryService


async def test_jwt_deployments_advertise_their_authorization_server(service: MemoryService) -> None:
    app = create_app(
        service,
        ApiKeyResolver({}, None),
        host="0.0.0.0",
        public_url="https://mem.example.com",
        authorization_server="https://auth.example.com/",
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver") as http:
        denied = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert denied.status_code == 401
        expected = 'Bearer resource_metadata="https://mem.example.com/.well-known/oauth-protected-resource"'
        assert denied.headers["www-authenticate"] == expected
        meta = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert meta["resource"] == "https://mem.example.com/mcp"
    assert meta["authorization_servers"] == ["https://auth.example.com/"]
