"""The Lambda adapter's parts on their own: event <-> ASGI, the persistent bridge, metrics, auth.

ASGI apps here are tiny real apps (plain coroutines), not mocks.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from handlers._asgi import AsgiBridge, HttpRequest, HttpResponse, LifespanError, UnsupportedEventError
from handlers._telemetry import RpcCall, record_tool_metrics, rpc_call
from rearview.api.lambda_auth import (
    ClaimsTenantResolver,
    LambdaAuthSettings,
    RefreshingKeyResolver,
    authenticated_principal,
    build_resolver,
    parse_key_map,
    principal_from_claims,
)
from rearview.config.settings import hash_key
from rearview.errors import ConfigurationError
from rearview.shared.principal import Principal
from tests.events import load_event, rpc_body

# ----------------------------------------------------------------------------- event -> request


def test_request_from_http_api_event() -> None:
    event = load_event("mcp-2026-07-28/tools-call-memory_search")
    request = HttpRequest.from_event(event)
    assert (request.method, request.path, request.scheme) == ("POST", "/mcp", "https")
    assert request.server == ("a1b2c3d4e5.execute-api.us-east-1.amazonaws.com", 443)
    assert request.client == ("203.0.113.10", 0)
    assert request.body == event["body"].encode()
    assert (b"mcp-protocol-version", b"2026-07-28") in request.headers
    assert request.request_id == "Rv000014ExAmPlE="


def test_request_decodes_base64_bodies_cookies_query_and_named_stages() -> None:
    event = load_event("mcp-2026-07-28/tools-list")
    body = event["body"].encode()
    event.update(
        body=base64.b64encode(body).decode(),
        isBase64Encoded=True,
        cookies=["a=1", "b=2"],
        rawQueryString="x=1&y=%20z",
        rawPath="/prod/caf%C3%A9",
    )
    event["requestContext"]["stage"] = "prod"
    request = HttpRequest.from_event(event)
    assert request.body == body
    assert (b"cookie", b"a=1; b=2") in request.headers
    assert request.query_string == b"x=1&y=%20z"
    assert request.path == "/café"
    assert request.raw_path == b"/caf%C3%A9"


@pytest.mark.parametrize(
    "event",
    [{"job": "decay"}, {"version": "1.0", "httpMethod": "GET", "path": "/mcp"}, {"version": "2.0"}],
)
def test_non_http_v2_events_are_refused(event: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedEventError):
        HttpRequest.from_event(event)


# ----------------------------------------------------------------------------- response -> result


def test_response_renders_headers_cookies_and_text() -> None:
    response = HttpResponse(
        200,
        [
            ("content-type", "application/json"),
            ("set-cookie", "a=1"),
            ("vary", "a"),
            ("vary", "b"),
            ("set-cookie", "b=2"),
        ],
        bytearray(b'{"ok": true}'),
    )
    result = response.to_proxy_result()
    assert result == {
        "statusCode": 200,
        "headers": {"content-type": "application/json", "vary": "a,b"},
        "cookies": ["a=1", "b=2"],
        "body": '{"ok": true}',
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize(
    ("headers", "binary"),
    [
        ([("content-type", "image/png")], True),
        ([("content-type", "application/json"), ("content-encoding", "gzip")], True),
        ([("content-type", "text/event-stream")], False),
        ([("content-type", "application/problem+json; charset=utf-8")], False),
        ([], False),
    ],
)
def test_binary_bodies_are_base64(headers: list[tuple[str, str]], binary: bool) -> None:
    raw = b"\x89PNG" if binary else b"hello"
    result = HttpResponse(200, headers, bytearray(raw)).to_proxy_result()
    assert result["isBase64Encoded"] is binary
    assert (base64.b64decode(result["body"]) if binary else result["body"].encode()) == raw


# ----------------------------------------------------------------------------- the bridge


class CountingApp:
    """A real ASGI app: counts lifespan startups, keeps a background task alive from its lifespan."""

    def __init__(self, fail_startup: bool = False) -> None:
        self.startups = 0
        self.shutdowns = 0
        self.ticks = 0
        self.fail_startup = fail_startup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        await receive()
        path = scope["path"]
        if path == "/hang":
            await asyncio.sleep(3600)
        if path == "/crash":
            raise RuntimeError("boom")
        if path == "/silent":
            return
        body = json.dumps({"startups": self.startups, "ticks": self.ticks, "state": sorted(scope["state"])})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body.encode()})
        scope["state"]["leaked"] = True  # must not reach the next request

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message: Message = await receive()
        assert message["type"] == "lifespan.startup"
        self.startups += 1
        if self.fail_startup:
            await send({"type": "lifespan.startup.failed", "message": "no table"})
            return
        ticker = asyncio.ensure_future(self._tick())
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        assert message["type"] == "lifespan.shutdown"
        ticker.cancel()
        self.shutdowns += 1
        await send({"type": "lifespan.shutdown.complete"})

    async def _tick(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0)


def _event(path: str) -> dict[str, Any]:
    event = load_event("http/get-mcp")
    event["rawPath"] = path
    return event


@pytest.fixture
def app() -> CountingApp:
    return CountingApp()


@pytest.fixture
def bridge(app: CountingApp) -> Iterator[AsgiBridge]:
    bridge = AsgiBridge(app)
    yield bridge
    bridge.close()


def _call(bridge: AsgiBridge, path: str, timeout_s: float = 5.0) -> HttpResponse:
    event = _event(path)
    return bridge.invoke(HttpRequest.from_event(event), event, None, timeout_s)


def test_lifespan_is_entered_once_and_its_tasks_survive_between_invocations(
    bridge: AsgiBridge, app: CountingApp
) -> None:
    seen = [json.loads(_call(bridge, "/ok").body) for _ in range(5)]
    assert [s["startups"] for s in seen] == [1] * 5
    ticks = [s["ticks"] for s in seen]
    assert ticks == sorted(ticks) and ticks[-1] > ticks[0]  # the lifespan's task kept running
    assert all("leaked" not in s["state"] for s in seen)
    bridge.close()
    assert app.shutdowns == 1
    assert bridge.closed
    bridge.close()  # idempotent


def test_a_hung_request_gets_504_and_the_bridge_keeps_serving(bridge: AsgiBridge) -> None:
    result = _call(bridge, "/hang", timeout_s=0.2)
    assert result.status == 504
    assert _call(bridge, "/ok").status == 200


def test_a_crash_before_answering_is_500(bridge: AsgiBridge) -> None:
    assert _call(bridge, "/crash").status == 500
    assert _call(bridge, "/silent").status == 500
    assert _call(bridge, "/ok").status == 200


def test_a_failed_startup_raises() -> None:
    with pytest.raises(LifespanError, match="no table"):
        AsgiBridge(CountingApp(fail_startup=True))


# ----------------------------------------------------------------------------- metrics


class ListSink:
    """Collects metrics like Powertools' `Metrics.add_metric` would emit them."""

    def __init__(self) -> None:
        self.metrics: list[tuple[str, str, float]] = []

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.metrics.append((name, str(unit), value))

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.metrics]


def _reply(structured: dict[str, Any] | None = None, is_error: bool = False) -> bytes:
    result = {"content": [], "structuredContent": structured, "isError": is_error}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


def test_rpc_call_reads_method_and_tool() -> None:
    event = load_event("mcp-2025-11-25/tools-call-memory_write")
    assert rpc_call(event["body"].encode()) == RpcCall("tools/call", "memory_write", rpc_body(event)["id"])
    assert rpc_call(b"not json") == RpcCall()
    assert rpc_call(b"[1, 2]") == RpcCall()


@pytest.mark.parametrize(
    ("tool", "structured", "expected"),
    [
        ("memory_write", {"action": "created"}, ["ToolCalls", "MemoryWrites"]),
        ("memory_write", {"action": "merged"}, ["ToolCalls", "MemoryWrites", "MemoryMerges"]),
        ("memory_write", {"action": "superseded"}, ["ToolCalls", "MemoryWrites", "MemorySupersedes"]),
        ("memory_search", {"degraded": False}, ["ToolCalls", "MemorySearches", "SearchLatency"]),
        (
            "memory_search",
            {"degraded": True},
            ["ToolCalls", "MemorySearches", "SearchLatency", "DegradedSearches"],
        ),
        ("memory_get", {"id": "x"}, ["ToolCalls"]),
    ],
)
def test_tool_metrics(tool: str, structured: dict[str, Any], expected: list[str]) -> None:
    sink = ListSink()
    record_tool_metrics(sink, RpcCall("tools/call", tool), 200, _reply(structured), 12.5)
    assert sink.names == expected
    if "SearchLatency" in expected:
        assert ("SearchLatency", "Milliseconds", 12.5) in sink.metrics


def test_error_metrics() -> None:
    sink = ListSink()
    record_tool_metrics(sink, RpcCall("tools/call", "memory_write"), 200, _reply(is_error=True), 1)
    record_tool_metrics(sink, RpcCall("tools/call", "memory_write"), 502, b"", 1)
    record_tool_metrics(sink, RpcCall("tools/call", "memory_write"), 401, b"{}", 1)
    record_tool_metrics(sink, RpcCall("tools/list"), 200, b"{}", 1)
    assert sink.names == ["ToolCalls", "ToolErrors", "ToolCalls", "ToolErrors", "AuthFailures"]


# ----------------------------------------------------------------------------- auth

DIGEST_A = hash_key("key-a")


def test_key_map_accepts_only_hashed_keys() -> None:
    assert parse_key_map(json.dumps({DIGEST_A: "tenant-a"}), "src") == {DIGEST_A: Principal("tenant-a")}
    for raw, problem in [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        (json.dumps({"key-a": "tenant-a"}), "entry 1 is not a sha256"),
        (json.dumps({DIGEST_A: ""}), "entry 1 must map"),
        (json.dumps({DIGEST_A: 7}), "entry 1 must map"),
        (json.dumps({DIGEST_A: {"agent": "claude-code"}}), "entry 1 must map"),
        (json.dumps({DIGEST_A: {"tenant": "t", "agent": ""}}), "entry 1 must map"),
        (json.dumps({DIGEST_A: {"tenant": "t", "agnet": "claude-code"}}), "entry 1 must map"),
    ]:
        with pytest.raises(ConfigurationError, match=problem) as info:
            parse_key_map(raw, "src")
        assert "key-a" not in str(info.value)  # errors never echo a key


def test_refreshing_resolver_picks_up_rotated_keys_and_survives_failed_reads() -> None:
    now = [0.0]
    maps: list[str | Exception] = [
        json.dumps({DIGEST_A: "tenant-a"}),
        json.dumps({DIGEST_A: "tenant-a"}),
        json.dumps({hash_key("key-b"): "tenant-b"}),
        ConfigurationError("REARVIEW_API_KEYS_PARAMETER", "/keys cannot be read (ThrottlingException)"),
        "not json",
        json.dumps({hash_key("key-c"): "tenant-c"}),
    ]

    def read(force: bool) -> str:
        item = maps.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    resolver = RefreshingKeyResolver(read, "src", retry_after_s=60, monotonic=lambda: now[0]).load()
    assert resolver.principal_for("key-a") == Principal("tenant-a")
    assert resolver.principal_for("key-a") is None  # rotated out
    assert resolver.principal_for("key-b") == Principal("tenant-b")  # read failed: previous keys kept
    assert resolver.principal_for("key-b") == Principal("tenant-b")  # no read until the pause is over
    assert len(maps) == 2
    now[0] = 61
    assert resolver.principal_for("key-b") == Principal("tenant-b")  # malformed map: previous keys kept
    now[0] = 122
    assert resolver.principal_for("key-c") == Principal("tenant-c")
    assert resolver.open is False


def test_expire_bypasses_the_cache_once() -> None:
    reads: list[bool] = []

    def read(force: bool) -> str:
        reads.append(force)
        return json.dumps({hash_key("key-b" if len(reads) > 2 else "key-a"): "tenant-x"})

    resolver = RefreshingKeyResolver(read, "src").load()
    assert resolver.principal_for("key-a") == Principal("tenant-x")
    resolver.expire()  # what a SnapStart restore does
    assert resolver.principal_for("key-b") == Principal("tenant-x")
    assert resolver.principal_for("key-b") == Principal("tenant-x")
    assert reads == [True, False, True, False]


def test_a_malformed_key_map_fails_init() -> None:
    with pytest.raises(ConfigurationError, match="REARVIEW_API_KEYS_JSON"):
        build_resolver(LambdaAuthSettings(api_keys_json="[]"))


def test_no_keys_means_closed_not_open() -> None:
    resolver = build_resolver(LambdaAuthSettings(auth_mode="apikey"))
    assert resolver.open is False
    assert resolver.principal_for("anything") is None
    assert resolver.principal_for(None) is None


def test_blank_sources_are_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_API_KEYS_JSON", "")
    monkeypatch.setenv("REARVIEW_API_KEYS_PARAMETER", " ")
    settings = LambdaAuthSettings()
    assert settings.api_keys_json is None
    assert settings.api_keys_parameter is None


def test_claims_resolver_sees_only_the_gateway_principal() -> None:
    resolver = build_resolver(LambdaAuthSettings(auth_mode="jwt"))
    assert isinstance(resolver, ClaimsTenantResolver)
    assert resolver.principal_for("any bearer token") is None
    with authenticated_principal(Principal("tenant-jwt", "agent-jwt")):
        assert resolver.principal_for(None) == Principal("tenant-jwt", "agent-jwt")
    assert resolver.principal_for(None) is None


def test_principal_from_claims() -> None:
    event = load_event("jwt/tools-list")
    assert principal_from_claims(event, "org_id") == Principal("tenant-jwt")
    assert principal_from_claims(event, "sub") == Principal("user-7f3a")
    assert principal_from_claims(event, "missing") is None
    event["requestContext"]["authorizer"]["jwt"]["claims"]["org_id"] = ["a", "b"]
    assert principal_from_claims(event, "org_id") is None
    assert principal_from_claims(load_event("mcp-2026-07-28/tools-list"), "sub") is None


def test_an_agent_claim_binds_the_token_to_its_agent_and_is_required() -> None:
    event = load_event("jwt/tools-list")
    assert principal_from_claims(event, "org_id", agent_claim="sub") == Principal("tenant-jwt", "user-7f3a")
    assert principal_from_claims(event, "org_id", agent_claim="azp") is None  # no such claim: refused
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = 42
    assert principal_from_claims(event, "org_id", agent_claim="sub") is None


def test_agent_claim_setting_is_unset_when_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_AGENT_CLAIM", "")
    assert LambdaAuthSettings().agent_claim is None
    monkeypatch.setenv("REARVIEW_AGENT_CLAIM", "client_id")
    assert LambdaAuthSettings().agent_claim == "client_id"


def test_key_map_entries_may_bind_a_key_to_an_agent() -> None:
    raw = json.dumps(
        {DIGEST_A: {"tenant": "tenant-a", "agent": "claude-code"}, hash_key("key-b"): "tenant-b"}
    )
    resolver = RefreshingKeyResolver(lambda _force: raw, "src").load()
    assert resolver.principal_for("key-a") == Principal("tenant-a", "claude-code")
    assert resolver.principal_for("key-b") == Principal("tenant-b")
