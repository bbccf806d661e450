"""The memory browser's security: sign-in, the session cookie, CSRF, headers, Host, and what stays behind auth.

Driven through the whole ASGI app (`create_app(ui=True)`) with Starlette's TestClient.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.config.settings import hash_key
from rearview.errors import ConfigurationError
from rearview.models import WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from rearview.ui.csrf import same_origin
from rearview.ui.inputs import safe_next
from rearview.ui.security_headers import CSP, is_loopback_host
from rearview.ui.session import COOKIE_NAME, SessionCodec

SECRET = "a-test-secret-of-enough-length-0123"
KEYS = {"key-alice-1": Principal("alice"), "key-bob-1": Principal("bob")}


def app_for(
    service: MemoryService, keys: dict[str, Principal] = KEYS, host: str = "0.0.0.0", **kw: Any
) -> ASGIApp:
    resolver = ApiKeyResolver({hash_key(k): p for k, p in keys.items()}, None if keys else "local")
    return create_app(service, resolver, host=host, ui=True, ui_secret=SECRET, **kw)


def signed_in(service: MemoryService, key: str = "key-alice-1", **kw: Any) -> TestClient:
    client = TestClient(app_for(service, **kw))
    response = client.post("/ui/login", data={"api_key": key}, follow_redirects=False)
    assert response.status_code == 303
    return client


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no csrf token on the page"
    return match.group(1)


def test_login_page_and_good_key_sets_a_strict_cookie_without_the_key(service: MemoryService) -> None:
    client = TestClient(app_for(service))
    page = client.get("/ui/login")
    assert page.status_code == 200
    assert '<form id="login" method="post" action="/ui/login">' in page.text
    assert '<label for="api_key">API key</label>' in page.text
    response = client.post("/ui/login", data={"api_key": "key-alice-1"}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE_NAME}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "Secure" not in cookie  # plain http here; see the https test
    assert "key-alice-1" not in cookie and hash_key("key-alice-1")[7:] not in cookie
    memories = client.get("/ui/memories")
    assert memories.status_code == 200 and "key-alice-1" not in memories.text
    assert "Tenant <strong>alice</strong>" in memories.text


def test_cookie_is_secure_over_https(service: MemoryService) -> None:
    client = TestClient(
        app_for(service, public_url="https://mem.example.com"), base_url="https://mem.example.com"
    )
    response = client.post("/ui/login", data={"api_key": "key-alice-1"}, follow_redirects=False)
    assert "Secure" in response.headers["set-cookie"]


def test_bad_key_is_401_with_an_alert_and_no_cookie(service: MemoryService) -> None:
    client = TestClient(app_for(service))
    for data in ({"api_key": "wrong"}, {"api_key": ""}, {}):
        response = client.post("/ui/login", data=data, follow_redirects=False)
        assert response.status_code == 401
        assert '<p role="alert" class="error">' in response.text
        assert "set-cookie" not in response.headers
        assert "wrong" not in response.text


def test_pages_redirect_to_login_with_next_and_come_back(service: MemoryService) -> None:
    client = TestClient(app_for(service))
    for path in ("/ui/memories", "/ui/search?q=tea", "/ui/memories/01ABC"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303
        assert response.headers["location"].startswith("/ui/login?next=")
    page = client.get("/ui/search?q=tea")  # followed: the login form, carrying next
    assert 'name="next" value="/ui/search?q=tea"' in page.text
    back = client.post(
        "/ui/login", data={"api_key": "key-alice-1", "next": "/ui/search?q=tea"}, follow_redirects=False
    )
    assert back.headers["location"] == "/ui/search?q=tea"


@pytest.mark.parametrize(
    "target",
    ["//evil.example/ui/", "https://evil.example/ui/", "/mcp", "/ui\\..\\x", "/\\evil.example", None, ""],
)
def test_next_never_leaves_the_ui(target: str | None) -> None:
    assert safe_next(target) is None


def test_next_inside_the_ui_is_kept() -> None:
    assert safe_next("/ui/memories?type=semantic") == "/ui/memories?type=semantic"


def test_logout_needs_csrf_and_clears_the_cookie(service: MemoryService) -> None:
    client = signed_in(service)
    page = client.get("/ui/memories")
    assert '<form id="logout" method="post" action="/ui/logout">' in page.text
    refused = client.post("/ui/logout", data={}, follow_redirects=False)
    assert refused.status_code == 403
    response = client.post("/ui/logout", data={"csrf_token": csrf_token(page.text)}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/login"
    assert (
        f'{COOKIE_NAME}=""' in response.headers["set-cookie"] or "Max-Age=0" in response.headers["set-cookie"]
    )
    assert client.get("/ui/memories", follow_redirects=False).status_code == 303


def test_tampered_expired_or_revoked_sessions_end(service: MemoryService) -> None:
    client = signed_in(service)
    cookie = client.cookies[COOKIE_NAME]
    body, mac = cookie.split(".")
    fresh = TestClient(app_for(service))
    other = "B" if mac[-1] == "A" else "A"
    flipped = "B" if mac[0] == "A" else "A"
    for forged in (
        body + "." + mac[:-1] + other,  # a last character whose spare bits differ decodes alike
        body + "." + flipped + mac[1:],
        body[:-2] + "." + mac,
        "garbage",
        "",
    ):
        fresh.cookies.set(COOKIE_NAME, forged, path="/ui")
        assert fresh.get("/ui/memories", follow_redirects=False).status_code == 303
    # Another process with the same secret and keys accepts it (Lambda instances share the secret) ...
    same = TestClient(app_for(service))
    same.cookies.set(COOKIE_NAME, cookie, path="/ui")
    assert same.get("/ui/memories", follow_redirects=False).status_code == 200
    # ... but not once the key is revoked, or remapped to another tenant.
    for keys in ({"key-bob-1": Principal("bob")}, {"key-alice-1": Principal("mallory")}):
        revoked = TestClient(app_for(service, keys=keys))
        revoked.cookies.set(COOKIE_NAME, cookie, path="/ui")
        assert revoked.get("/ui/memories", follow_redirects=False).status_code == 303


def test_session_codec_refuses_expired_and_short_secrets() -> None:
    codec = SessionCodec(SECRET)
    resolver = ApiKeyResolver({hash_key("k"): Principal("t")}, None)
    from rearview.api.auth import key_fingerprint

    _, cookie = codec.issue(Principal("t"), key_fingerprint(hash_key("k")), now=1000)
    assert codec.verify(cookie, resolver, now=1001) is not None
    assert codec.verify(cookie, resolver, now=1000 + 8 * 3600) is None
    assert SessionCodec("another-secret-entirely-0123456").verify(cookie, resolver, now=1001) is None
    with pytest.raises(ConfigurationError, match="ui_secret"):
        SessionCodec("short")


def test_posts_without_a_valid_token_or_from_another_origin_are_403(service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea")).memory
    client = signed_in(service)
    token = csrf_token(client.get(f"/ui/memories/{memory.id}").text)
    edit = f"/ui/memories/{memory.id}/edit"
    for data, headers in (
        ({"content": "changed"}, {}),
        ({"content": "changed", "csrf_token": "forged"}, {}),
        ({"content": "changed", "csrf_token": token}, {"Origin": "http://evil.example"}),
        ({"content": "changed", "csrf_token": token}, {"Origin": "null"}),
    ):
        response = client.post(edit, data=data, headers=headers, follow_redirects=False)
        assert response.status_code == 403, (data, headers)
    for path in ("forget", "restore"):
        assert client.post(f"/ui/memories/{memory.id}/{path}", data={"mode": "hard"}).status_code == 403
    assert service.get("alice", memory.id).version == 1
    same_site = client.post(
        edit, data={"content": "changed", "csrf_token": token}, headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )  # fmt: skip
    assert same_site.status_code == 303
    assert service.get("alice", memory.id).content == "changed"


def test_a_token_is_bound_to_its_session(service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea")).memory
    first, second = signed_in(service), signed_in(service)
    token = csrf_token(first.get(f"/ui/memories/{memory.id}").text)
    response = second.post(f"/ui/memories/{memory.id}/edit", data={"content": "x", "csrf_token": token})
    assert response.status_code == 403


def test_login_from_another_origin_is_refused(service: MemoryService) -> None:
    client = TestClient(app_for(service))
    response = client.post(
        "/ui/login", data={"api_key": "key-alice-1"}, headers={"Origin": "http://evil.example"},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_every_response_carries_the_security_headers(service: MemoryService) -> None:
    memory = service.write("alice", WriteRequest(content="User prefers tea")).memory
    client = signed_in(service)
    paths = [
        "/ui/login", "/ui/memories", f"/ui/memories/{memory.id}", "/ui/search?q=tea", "/ui/search",
        "/ui/memories/does-not-exist", "/ui/nope", "/ui/static/ui.css", "/ui/memories?limit=0",
    ]  # fmt: skip
    responses = [client.get(p, follow_redirects=False) for p in paths]
    responses.append(client.post(f"/ui/memories/{memory.id}/edit", data={}))
    responses.append(TestClient(app_for(service)).get("/ui/memories", follow_redirects=False))
    for response in responses:
        headers = response.headers
        assert headers["content-security-policy"] == CSP, response.url
        assert "default-src 'none'" in CSP and "frame-ancestors 'none'" in CSP and "unsafe-inline" not in CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"  # not no-referrer: see security_headers
        assert headers["cache-control"] == "no-store"
    html = responses[1].text
    assert "<script" not in html and "style=" not in html and "<style" not in html
    assert [r.status_code for r in responses[5:9]] == [404, 404, 200, 400]


def test_mcp_stays_behind_tenant_auth_when_the_ui_is_on(service: MemoryService) -> None:
    client = signed_in(service)  # a UI session cookie must not open /mcp
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for path in ("/mcp", "/uix", "/mcp/ui", "/ui-mcp"):
        assert client.post(path, json=listing).status_code == 401, path
    assert client.get("/healthz").status_code == 200


def test_ui_off_by_default_in_create_app(service: MemoryService) -> None:
    resolver = ApiKeyResolver({hash_key("k"): Principal("t")}, None)
    assert TestClient(create_app(service, resolver, host="0.0.0.0")).get("/ui/login").status_code == 401


def test_open_mode_needs_no_login_but_checks_host(service: MemoryService) -> None:
    memory = service.write("local", WriteRequest(content="User prefers tea")).memory
    client = TestClient(app_for(service, keys={}, host="127.0.0.1"), base_url="http://127.0.0.1:8080")
    page = client.get(f"/ui/memories/{memory.id}")
    assert page.status_code == 200 and 'id="logout"' not in page.text
    assert client.get("/ui/login", follow_redirects=False).headers["location"] == "/ui/memories"
    response = client.post(
        f"/ui/memories/{memory.id}/edit", data={"content": "User prefers green tea", "csrf_token": csrf_token(page.text)},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 303
    assert client.post(f"/ui/memories/{memory.id}/forget", data={"mode": "soft"}).status_code == 403
    for host in ("evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost:80x"):
        rebound = client.get("/ui/memories", headers={"Host": host})
        assert rebound.status_code == 421, host
        assert rebound.headers["content-security-policy"] == CSP
    assert client.get("/ui/memories", headers={"Host": "localhost:8080"}).status_code == 200


def test_loopback_hosts() -> None:
    assert all(map(is_loopback_host, ["127.0.0.1", "127.0.0.1:80", "localhost:8080", "[::1]:9", "LOCALHOST"]))
    assert not any(map(is_loopback_host, [None, "", "127.0.0.2", "[::1]x", "localhost.evil", "a@localhost"]))


def test_same_origin() -> None:
    hosts = ["mem.example.com", "127.0.0.1:8080"]
    assert same_origin(None, hosts)
    assert same_origin("https://mem.example.com", hosts) and same_origin("http://127.0.0.1:8080", hosts)
    for origin in (
        "null",
        "https://evil.example",
        "https://mem.example.com.evil",
        "file://",
        "http://127.0.0.1",
    ):
        assert not same_origin(origin, hosts), origin


def test_loopback_behind_a_local_proxy_accepts_the_public_host(service: MemoryService) -> None:
    app = app_for(service, host="127.0.0.1", public_url="https://mem.example.com")
    client = TestClient(app, base_url="https://mem.example.com")
    assert client.get("/ui/login").status_code == 200
    assert client.get("/ui/login", headers={"Host": "evil.example"}).status_code == 421


def test_lambda_key_map_sessions_end_when_the_map_drops_the_key() -> None:
    from rearview.api.auth import key_fingerprint
    from rearview.api.lambda_auth import RefreshingKeyResolver

    maps = [json.dumps({hash_key("k1"): "alice"}), json.dumps({hash_key("k2"): "alice"})]
    resolver = RefreshingKeyResolver(read=lambda force: maps[0], retry_after_s=0).load()
    fingerprint = key_fingerprint(hash_key("k1"))
    assert resolver.principal_for_fingerprint(fingerprint) == Principal("alice")
    maps.pop(0)
    assert resolver.principal_for_fingerprint(fingerprint) is None
    assert resolver.principal_for_fingerprint("short") is None


def test_lambda_serves_the_browser_only_in_api_key_mode() -> None:
    from handlers.mcp import McpHandlerSettings

    assert McpHandlerSettings().ui is False
    assert McpHandlerSettings(ui=True).ui_enabled("apikey") is True
    assert McpHandlerSettings(ui=True).ui_enabled("jwt") is False
