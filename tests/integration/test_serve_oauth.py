"""`rearview serve` with `REARVIEW_JWT_ISSUER` (issue 33.6): it advertises the issuer and accepts its tokens.

The server is the real command in a subprocess; the issuer is `tests.oauth_issuer.LocalIssuer` (an
RSA key, its JWKS and OIDC discovery document on a loopback port). A valid token works with the
official `mcp` client in its tenant only; every kind of bad token is a 401 `invalid_token`, and API
keys keep working beside tokens. The refusal limiter and an unreachable issuer are checked on the
same app in process (`create_app`), where the limit can be small.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from starlette.testclient import TestClient

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.api.jwt_auth import JwtVerifier
from rearview.bootstrap import build_service
from rearview.cli import main
from rearview.config.settings import Settings
from rearview.errors import BackendError, ConfigurationError
from rearview.shared.principal import Principal
from tests.e2e.server import free_port
from tests.mcp_client import MODES, call, connect
from tests.oauth_issuer import KID, LocalIssuer, local_issuer, new_key

ROOT = Path(__file__).resolve().parents[2]
AUDIENCE = "https://rearview.test/mcp"
API_KEY = "sk-keyed-beside-oauth"
METADATA = "/.well-known/oauth-protected-resource/mcp"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass(frozen=True)
class Served:
    issuer: LocalIssuer
    base: str
    banner: str

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("serve-oauth")
    config = root / "config.toml"
    config.write_text(f'[api_keys]\n"{API_KEY}" = "keyed"\n')
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")},
        "PYTHONPATH": str(ROOT / "functions"),
        "PYTHONUNBUFFERED": "1",
        "REARVIEW_DATA_DIR": str(root / "data"),
        "REARVIEW_CONFIG_FILE": str(config),
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
        "REARVIEW_AUTH_REFUSALS_PER_MINUTE": "0",  # each test refuses tokens; the limiter: test below
        "REARVIEW_JWT_AUDIENCE": AUDIENCE,
    }
    code = "import sys\nfrom rearview.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    with local_issuer() as issuer, (root / "out").open("w+") as out, (root / "err").open("w+") as err:
        env["REARVIEW_JWT_ISSUER"] = issuer.url
        server = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--port", str(port)], env=env, stdout=out, stderr=err
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_healthy(base, server, root / "err")
            yield Served(issuer, base, (root / "out").read_text())
        finally:
            server.terminate()
            server.wait(timeout=30)


def _wait_healthy(base: str, server: subprocess.Popen[bytes], err: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"rearview serve exited {server.returncode}: {err.read_text()}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"rearview serve did not answer /healthz: {err.read_text()}")


def _post(served: Served, token: str | None) -> httpx.Response:
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token is not None else {})}
    return httpx.post(served.mcp, json=INITIALIZE, headers=headers, timeout=30)


def test_the_banner_says_oauth_is_on_and_which_issuer(served: Served) -> None:
    assert f"1 API key; OAuth on: tokens of {served.issuer.url}, audience {AUDIENCE}" in served.banner


def test_the_protected_resource_metadata_names_the_issuer(served: Served) -> None:
    for path in (METADATA, "/.well-known/oauth-protected-resource"):
        document = httpx.get(served.base + path, timeout=10).json()
        assert document["authorization_servers"] == [served.issuer.url]
        assert document["resource"] == served.mcp


def test_a_request_without_a_token_gets_401_pointing_at_the_metadata(served: Served) -> None:
    response = _post(served, None)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert f'resource_metadata="{served.base}{METADATA}"' in challenge
    assert "invalid_token" not in challenge  # nothing was presented (RFC 6750 §3.1)


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_acts_in_its_own_tenant_only(served: Served, mode: str) -> None:
    issuer = served.issuer
    fact = f"Tenant X deploys on Fridays ({mode})"
    async with connect(served.mcp, mode, key=issuer.token(f"tenant-x-{mode}", aud=AUDIENCE)) as client:
        written = await call(client, "memory_write", {"content": fact})
        found = await call(client, "memory_search", {"query": "when does tenant X deploy?"})
        assert [hit["id"] for hit in found["results"]] == [written["id"]]
    async with connect(served.mcp, mode, key=issuer.token(f"tenant-y-{mode}", aud=AUDIENCE)) as client:
        found = await call(client, "memory_search", {"query": "when does tenant X deploy?"})
        assert found["results"] == []
        assert (await call(client, "memory_stats", {}))["total"] == 0


async def test_api_keys_keep_working_beside_tokens(served: Served) -> None:
    async with connect(served.mcp, MODES[0], key=API_KEY) as client:
        await call(client, "memory_write", {"content": "Keyed tenant likes green tea"})
        assert (await call(client, "memory_stats", {}))["total"] == 1


def _alg_none(issuer: LocalIssuer) -> str:
    header = {"alg": "none", "typ": "JWT", "kid": KID}
    payload = {"iss": issuer.url, "sub": "mallory", "aud": AUDIENCE, "exp": int(time.time()) + 300}
    return f"{_b64(header)}.{_b64(payload)}."


def _hs256_with_the_public_key(issuer: LocalIssuer) -> str:
    """The classic confusion: HMAC "signed" with the issuer's public key, which anyone can read."""
    header = {"alg": "HS256", "typ": "JWT", "kid": KID}
    payload = {"iss": issuer.url, "sub": "mallory", "aud": AUDIENCE, "exp": int(time.time()) + 300}
    signing_input = f"{_b64(header)}.{_b64(payload)}"
    secret = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def _b64(part: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()


BAD_TOKENS = {
    "expired": lambda i: i.token("alice", aud=AUDIENCE, lifetime_s=-3600),
    "wrong issuer": lambda i: i.token("alice", aud=AUDIENCE, iss="https://evil.example"),
    "wrong audience": lambda i: i.token("alice", aud="https://another.example/mcp"),
    "no audience": lambda i: i.token("alice"),
    "no expiry": lambda i: jwt.encode(
        {"iss": i.url, "sub": "alice", "aud": AUDIENCE}, i.key, algorithm="RS256", headers={"kid": KID}
    ),
    "wrong signing key": lambda i: i.token("alice", aud=AUDIENCE, key=new_key()),
    "alg none": _alg_none,
    "hs256 with the public key": _hs256_with_the_public_key,
    "no tenant claim": lambda i: i.token("", aud=AUDIENCE),
    "not a jwt": lambda _: "not.a.jwt",
}


@pytest.mark.parametrize("make", BAD_TOKENS.values(), ids=BAD_TOKENS.keys())
def test_a_bad_token_is_refused_like_a_wrong_key(served: Served, make: object) -> None:
    token = make(served.issuer)  # type: ignore[operator]
    response = _post(served, token)
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{served.base}{METADATA}"' in challenge
    assert response.json()["error"] == "unauthorized"


# ----------------------------------------------------------------------------- in process


def test_the_keys_are_fetched_at_the_first_token_and_then_cached() -> None:
    with local_issuer() as issuer:
        verifier = JwtVerifier(issuer.url, audience=AUDIENCE)
        assert issuer.requests == []  # the constructor does no I/O
        for tenant in ("a", "b", "c"):
            assert verifier.principal_for_token(issuer.token(tenant, aud=AUDIENCE)) == Principal(tenant)
        assert issuer.requests == ["/.well-known/openid-configuration", "/jwks.json"]


def test_a_jwks_url_skips_discovery_and_the_claims_are_read_as_on_lambda() -> None:
    with local_issuer() as issuer:
        verifier = JwtVerifier(issuer.url, jwks_url=issuer.jwks_url, tenant_claim="org", agent_claim="azp")
        assert verifier.principal_for_token(issuer.token("u1", org="acme", azp="claude")) == Principal(
            "acme", "claude"
        )
        assert verifier.principal_for_token(issuer.token("u1", org="acme")) is None  # agent claim required
        assert issuer.requests == ["/jwks.json"]


def test_discovery_naming_another_issuer_is_the_servers_problem_not_the_callers() -> None:
    with local_issuer() as issuer:
        verifier = JwtVerifier(issuer.url + "/")  # the tokens' `iss` has no trailing slash
        with pytest.raises(BackendError, match="REARVIEW_JWT_ISSUER"):
            verifier.principal_for_token(issuer.token("alice"))


@pytest.mark.parametrize(("setting", "kwargs"), [("REARVIEW_JWT_ISSUER", {"issuer": "issuer.example"}),
                                                 ("REARVIEW_JWT_JWKS_URL", {"issuer": "https://i.example", "jwks_url": "file:///etc/passwd"})])  # fmt: skip
def test_an_issuer_or_jwks_url_that_is_not_http_is_a_configuration_error(
    setting: str, kwargs: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError, match=setting):
        JwtVerifier(**kwargs)


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[tuple[LocalIssuer, TestClient]]:
    service = build_service(Settings.load(data_dir=tmp_path, embedder="hashing"))
    with local_issuer() as issuer:
        app = create_app(
            service,
            ApiKeyResolver({}, default_tenant=None),
            authorization_server=issuer.url,
            token_verifier=JwtVerifier(issuer.url),
            refusals_per_minute=2,
        )
        yield issuer, TestClient(app, base_url="http://127.0.0.1:8080")


def test_refused_tokens_count_against_the_client_like_wrong_keys(
    in_process: tuple[LocalIssuer, TestClient],
) -> None:
    issuer, client = in_process
    bad = {"Authorization": f"Bearer {issuer.token('alice', key=new_key())}", **MCP_HEADERS}
    assert [client.post("/mcp", json=INITIALIZE, headers=bad).status_code for _ in range(3)] == [
        401,
        401,
        429,
    ]


def test_an_unreachable_issuer_is_503_and_not_counted_against_the_client(
    in_process: tuple[LocalIssuer, TestClient],
) -> None:
    issuer, client = in_process
    issuer.down = True
    good = {"Authorization": f"Bearer {issuer.token('alice')}", **MCP_HEADERS}
    responses = [client.post("/mcp", json=INITIALIZE, headers=good) for _ in range(3)]
    assert [r.status_code for r in responses] == [503, 503, 503]  # never 429: no refusal counted
    assert responses[0].json()["error"] == "unavailable"
    assert responses[0].json()["message"].startswith(f"OIDC discovery at {issuer.url}/.well-known/")


def test_serve_with_an_issuer_and_no_keys_may_bind_publicly_and_turns_the_browser_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    from rearview.api.access_log import ACCESS_LOGGER

    apps: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: apps.append(app))
    monkeypatch.setattr(ACCESS_LOGGER, "handlers", list(ACCESS_LOGGER.handlers))
    monkeypatch.setattr(ACCESS_LOGGER, "propagate", ACCESS_LOGGER.propagate)
    monkeypatch.setattr(ACCESS_LOGGER, "level", ACCESS_LOGGER.level)
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_LIFECYCLE_INTERVAL_S", "0")
    monkeypatch.setenv("REARVIEW_JWT_ISSUER", "https://issuer.example")
    port = free_port()
    assert main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--port", str(port)]) == 0
    out = capsys.readouterr().out
    assert "Memory browser off" in out and "OAuth on: tokens of https://issuer.example" in out
    (app,) = apps
    client = TestClient(app, base_url=f"http://127.0.0.1:{port}")  # type: ignore[arg-type]
    assert client.get(METADATA).json()["authorization_servers"] == ["https://issuer.example"]
    assert client.get("/ui/memories").status_code == 401  # no browser: /ui is just another guarded path
    assert client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS).status_code == 401  # not open


def test_serve_refuses_an_issuer_that_is_not_a_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_JWT_ISSUER", "accounts.example.com")
    assert main(["--data-dir", str(tmp_path), "serve", "--port", str(free_port())]) == 2
    assert "REARVIEW_JWT_ISSUER" in capsys.readouterr().err
