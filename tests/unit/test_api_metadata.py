"""Protected-resource metadata (RFC 9728) as an OAuth client discovers it."""

from __future__ import annotations

import httpx
import pytest

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.origin import quoted_string
from rearview.principal import Principal
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


METADATA = "/.well-known/oauth-protected-resource"
HOSTILE_HOSTS = ['evil.com", error="x', "evil.com\r\nSet-Cookie: a=b", "evil.com/path", "", "a b"]


def _key_app(service: MemoryService, trust_forwarded_headers: bool = False) -> httpx.AsyncClient:
    app = create_app(
        service,
        ApiKeyResolver({"sha256:" + "0" * 64: Principal("t1")}, None),
        host="0.0.0.0",
        trust_forwarded_headers=trust_forwarded_headers,
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver:8080")


async def _challenge(http: httpx.AsyncClient, headers: dict[str, str]) -> tuple[str, str]:
    """The 401's `WWW-Authenticate` and the metadata's `resource`, for requests with `headers`."""
    denied = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
    )
    assert denied.status_code == 401
    meta = (await http.get(METADATA, headers=headers)).json()
    return denied.headers["www-authenticate"], meta["resource"]


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
async def test_a_malformed_host_header_falls_back_to_the_bound_host(
    service: MemoryService, host: str
) -> None:
    async with _key_app(service) as http:
        challenge, resource = await _challenge(http, {"host": host})
    assert challenge == f'Bearer resource_metadata="http://testserver:8080{METADATA}"'
    assert resource == "http://testserver:8080/mcp"


async def test_a_well_formed_host_header_names_the_origin_only_when_request_headers_are_trusted(
    service: MemoryService,
) -> None:
    async with _key_app(service) as http:
        assert await _challenge(http, {"host": "mem.example.com:8443"}) == (
            f'Bearer resource_metadata="http://testserver:8080{METADATA}"',
            "http://testserver:8080/mcp",
        )
    async with _key_app(service, trust_forwarded_headers=True) as http:
        challenge, resource = await _challenge(http, {"host": "mem.example.com:8443"})
    assert challenge == f'Bearer resource_metadata="http://mem.example.com:8443{METADATA}"'
    assert resource == "http://mem.example.com:8443/mcp"


async def test_forwarded_headers_count_only_when_trusted(service: MemoryService) -> None:
    forwarded = {"x-forwarded-proto": "https", "x-forwarded-host": "mem.example.com"}
    async with _key_app(service) as http:
        assert await _challenge(http, forwarded) == (
            f'Bearer resource_metadata="http://testserver:8080{METADATA}"',
            "http://testserver:8080/mcp",
        )
    async with _key_app(service, trust_forwarded_headers=True) as http:
        assert await _challenge(http, forwarded) == (
            f'Bearer resource_metadata="https://mem.example.com{METADATA}"',
            "https://mem.example.com/mcp",
        )


@pytest.mark.parametrize("proto", ['https", error="x', "javascript", "https\r\nX-Evil: 1"])
async def test_a_hostile_forwarded_proto_is_ignored_even_when_trusted(
    service: MemoryService, proto: str
) -> None:
    async with _key_app(service, trust_forwarded_headers=True) as http:
        challenge, resource = await _challenge(http, {"x-forwarded-proto": proto})
    assert challenge == f'Bearer resource_metadata="http://testserver:8080{METADATA}"'
    assert resource == "http://testserver:8080/mcp"


def test_a_header_parameter_is_quoted_string_escaped() -> None:
    assert quoted_string('https://a.example/"x\\\r\n') == '"https://a.example/\\"x\\\\"'
