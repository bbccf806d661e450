"""The refusal limiter keys on an address the client cannot choose (issue 24, item 8).

Behind a trusted proxy the limiter keyed on the *first* `X-Forwarded-For` hop, which the client
writes: a guesser sending a fresh first hop per request was never throttled, and anyone could lock
any address out by naming it. Now it keys on the hop the trusted proxies appended (a configured
number of them, rightmost first). In JWT mode API Gateway has already validated the token, so the
limiter, which protects keys checked here, never refuses a validated caller.
"""

from __future__ import annotations

from starlette.testclient import TestClient

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver, authenticate
from rearview.api.lambda_auth import ClaimsTenantResolver, authenticated_principal
from rearview.api.refusals import RefusedKeyLimiter
from rearview.config.settings import hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}
GUESSER, VICTIM = "198.51.100.66", "203.0.113.10"


def _client(service: MemoryService, proxies: int = 1) -> TestClient:
    resolver = ApiKeyResolver({hash_key("key-alice-1"): Principal("alice")}, None)
    app = create_app(
        service, resolver, host="0.0.0.0", trust_forwarded_headers=True, forwarded_proxies=proxies
    )
    return TestClient(app)


def _call(client: TestClient, key: str, forwarded: str) -> int:
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}", "x-forwarded-for": forwarded}
    return client.post("/mcp", json=LIST_TOOLS, headers=headers).status_code


def test_a_fresh_first_hop_per_guess_is_still_throttled(service: MemoryService) -> None:
    client = _client(service)
    codes = [_call(client, f"guess-{i}", f"10.9.{i}.1, {GUESSER}") for i in range(15)]
    assert codes[:10] == [401] * 10
    assert set(codes[10:]) == {429}


def test_naming_a_victim_in_the_first_hop_does_not_lock_it_out(service: MemoryService) -> None:
    with _client(service) as client:  # started: a served call needs the MCP app's lifespan
        for i in range(15):
            _call(client, f"guess-{i}", f"{VICTIM}, {GUESSER}")
        assert _call(client, "key-alice-1", VICTIM) == 200


def test_two_proxies_key_on_the_hop_the_outer_one_appended(service: MemoryService) -> None:
    with _client(service, proxies=2) as client:  # e.g. CloudFront, then API Gateway
        codes = [_call(client, f"guess-{i}", f"10.9.{i}.1, {GUESSER}, 10.0.0.2") for i in range(12)]
        assert codes[-1] == 429
        assert _call(client, "key-alice-1", f"{VICTIM}, 10.0.0.2") == 200


def test_jwt_mode_never_throttles_a_validated_token() -> None:
    """Callers behind one NAT: some requests arrive without the tenant claim (refused), yet a token
    API Gateway validated is served, not answered 429 unchecked."""
    resolver, limiter = ClaimsTenantResolver(), RefusedKeyLimiter(limit=3)
    with authenticated_principal(None):
        verdicts = [authenticate(resolver, limiter, "token-without-claim", GUESSER) for _ in range(10)]
    assert all(v.principal is None and not v.retry_after for v in verdicts)
    with authenticated_principal(Principal("tenant-a")):
        verdict = authenticate(resolver, limiter, "validated-token", GUESSER)
    assert (verdict.principal, verdict.retry_after) == (Principal("tenant-a"), 0)
