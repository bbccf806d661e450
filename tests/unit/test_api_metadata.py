"""The 401 challenge and the protected-resource metadata (RFC 9728), per auth mode.

API keys: a challenge that names no URL, and no metadata (an OAuth-capable client must not start an
OAuth flow). OAuth/JWT: a challenge pointing at the path-suffixed metadata naming the issuer.
"""

from __future__ import annotations

import httpx
import pytest

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.origin import quoted_string
from rearview.config.settings import hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal

METADATA = "/.well-known/oauth-protected-resource"
SUFFIXED = f"{METADATA}/mcp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
ISSUER = "https://auth.example.com/"


def _resolver() -> ApiKeyResolver:
    return ApiKeyResolver({hash_key("key-t1"): Principal("t1")}, None)


def _client(app: object, base_url: str = "http://testserver") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=base_url)  # type: ignore[arg-type]


async def test_api_key_mode_challenges_without_sending_clients_into_oauth(service: MemoryService) -> None:
    app = create_app(service, _resolver(), host="0.0.0.0", public_url="https://mem.example.com")
    async with _client(app) as http:
        missing = await http.post("/mcp", json=LIST)
        wrong = await http.post("/mcp", json=LIST, headers={"Authorization": "Bearer nope"})
        wrong_header = await http.post("/mcp", json=LIST, headers={"X-API-Key": "nope"})
        probes = [
            (await http.get(path)).status_code
            for path in (METADATA, SUFFIXED, "/.well-known/oauth-authorization-server")
        ]
    assert missing.status_code == wrong.status_code == wrong_header.status_code == 401
    assert (
        missing.headers["www-authenticate"] == 'Bearer realm="rearview"'
    )  # RFC 6750: no error when none sent
    assert wrong.headers["www-authenticate"] == 'Bearer realm="rearview", error="invalid_token"'
    assert wrong_header.headers["www-authenticate"] == wrong.headers["www-authenticate"]
    assert "Authorization: Bearer" in missing.json()["message"]
    assert missing.json()["error"] == wrong.json()["error"] == "unauthorized"
    assert probes == [404, 404, 404]  # discovery finds no OAuth here, and is not told to authenticate


async def test_oauth_mode_points_the_challenge_at_the_path_suffixed_metadata(service: MemoryService) -> None:
    app = create_app(
        service,
        ApiKeyResolver({}, None),
        host="0.0.0.0",
        public_url="https://mem.example.com",
        authorization_server=ISSUER,
    )
    async with _client(app) as http:
        missing = await http.post("/mcp", json=LIST)
        wrong = await http.post("/mcp", json=LIST, headers={"Authorization": "Bearer expired"})
        suffixed = (await http.get(SUFFIXED)).json()
        root = (await http.get(METADATA)).json()
    pointer = 'resource_metadata="https://mem.example.com/.well-known/oauth-protected-resource/mcp"'
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["www-authenticate"] == f'Bearer realm="rearview", {pointer}'
    assert wrong.headers["www-authenticate"] == f'Bearer realm="rearview", {pointer}, error="invalid_token"'
    assert suffixed == root
    assert suffixed["resource"] == "https://mem.example.com/mcp"
    assert suffixed["authorization_servers"] == [ISSUER]
    assert suffixed["bearer_methods_supported"] == ["header"]


HOSTILE_HOSTS = ['evil.com", error="x', "evil.com\r\nSet-Cookie: a=b", "evil.com/path", "", "a b"]


def _key_app(service: MemoryService, trust_forwarded_headers: bool = False) -> httpx.AsyncClient:
    """OAuth mode without a public URL: the origin in the challenge comes from the request."""
    app = create_app(
        service,
        _resolver(),
        host="0.0.0.0",
        authorization_server=ISSUER,
        trust_forwarded_headers=trust_forwarded_headers,
    )
    return _client(app, "http://testserver:8080")


def _pointer(origin: str) -> str:
    return f'Bearer realm="rearview", resource_metadata="{origin}{SUFFIXED}"'


async def _challenge(http: httpx.AsyncClient, headers: dict[str, str]) -> tuple[str, str]:
    """The 401's `WWW-Authenticate` and the metadata's `resource`, for requests with `headers`."""
    denied = await http.post("/mcp", json=LIST, headers=headers)
    assert denied.status_code == 401
    meta = (await http.get(SUFFIXED, headers=headers)).json()
    return denied.headers["www-authenticate"], meta["resource"]


@pytest.mark.parametrize("host", HOSTILE_HOSTS)
async def test_a_malformed_host_header_falls_back_to_the_bound_host(
    service: MemoryService, host: str
) -> None:
    async with _key_app(service) as http:
        challenge, resource = await _challenge(http, {"host": host})
    assert challenge == _pointer("http://testserver:8080")
    assert resource == "http://testserver:8080/mcp"


async def test_a_well_formed_host_header_names_the_origin_only_when_request_headers_are_trusted(
    service: MemoryService,
) -> None:
    async with _key_app(service) as http:
        assert await _challenge(http, {"host": "mem.example.com:8443"}) == (
            _pointer("http://testserver:8080"),
            "http://testserver:8080/mcp",
        )
    async with _key_app(service, trust_forwarded_headers=True) as http:
        challenge, resource = await _challenge(http, {"host": "mem.example.com:8443"})
    assert challenge == _pointer("http://mem.example.com:8443")
    assert resource == "http://mem.example.com:8443/mcp"


async def test_forwarded_headers_count_only_when_trusted(service: MemoryService) -> None:
    forwarded = {"x-forwarded-proto": "https", "x-forwarded-host": "mem.example.com"}
    async with _key_app(service) as http:
        assert await _challenge(http, forwarded) == (
            _pointer("http://testserver:8080"),
            "http://testserver:8080/mcp",
        )
    async with _key_app(service, trust_forwarded_headers=True) as http:
        assert await _challenge(http, forwarded) == (
            _pointer("https://mem.example.com"),
            "https://mem.example.com/mcp",
        )


@pytest.mark.parametrize("proto", ['https", error="x', "javascript", "https\r\nX-Evil: 1"])
async def test_a_hostile_forwarded_proto_is_ignored_even_when_trusted(
    service: MemoryService, proto: str
) -> None:
    async with _key_app(service, trust_forwarded_headers=True) as http:
        challenge, resource = await _challenge(http, {"x-forwarded-proto": proto})
    assert challenge == _pointer("http://testserver:8080")
    assert resource == "http://testserver:8080/mcp"


def test_a_header_parameter_is_quoted_string_escaped() -> None:
    assert quoted_string('https://a.example/"x\\\r\n') == '"https://a.example/\\"x\\\\"'
