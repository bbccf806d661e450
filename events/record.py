"""Re-record the sample events in this folder from a real MCP client talking to the real app.

    PYTHONPATH=functions:. .venv/bin/python events/record.py

It serves `rearview.api.app.create_app` with uvicorn on a free loopback port (in-memory store
and index, hashing embedder), drives it with the official `mcp` SDK client in both protocol
eras (`mode="legacy"`: 2025-11-25 initialize handshake; `mode="2026-07-28"`: per-request
`_meta`, no handshake; `mode="auto"`: the `server/discover` probe), captures every HTTP request
the client sends (an httpx2 event hook: method, headers, body exactly as sent), and wraps each
one into the event API Gateway (HTTP API, payload 2.0) or a Function URL would hand the Lambda
function. Host, request ids and times are replaced with fixed example values so re-recording
only changes what the SDK changed.

The API keys below are examples for local invocations only; `env.json` holds their hashes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.bootstrap import build_service
from rearview.config.settings import Settings, hash_key
from rearview.shared.principal import Principal

EVENTS = Path(__file__).resolve().parent
TENANT_A_KEY = "rv-example-tenant-a-key"
TENANT_B_KEY = "rv-example-tenant-b-key"
TENANTS = {TENANT_A_KEY: "tenant-a", TENANT_B_KEY: "tenant-b"}
API_ID = "a1b2c3d4e5"
API_DOMAIN = f"{API_ID}.execute-api.us-east-1.amazonaws.com"
URL_ID = "x7k2m9q4w8e5r1t6y3u0i2o5p8"
URL_DOMAIN = f"{URL_ID}.lambda-url.us-east-1.on.aws"
TIME_EPOCH_MS = 1785240000000  # 2026-07-28T12:00:00Z
JWT_ISSUER = "https://auth.example.com/"
JWT_CLAIMS = {
    "iss": JWT_ISSUER,
    "sub": "user-7f3a",
    "aud": "rearview",
    "org_id": "tenant-jwt",
    "iat": "1785239940",
    "exp": "1785243540",
    "scope": "memory:read memory:write",
}
DROPPED_HEADERS = {"connection", "host"}

Recorded = dict[str, Any]


class Recorder:
    """Collects the requests an httpx2 client sends (the exact bytes of headers and body)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []

    async def on_request(self, request: httpx2.Request) -> None:
        self.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query.decode() if isinstance(request.url.query, bytes) else "",
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": request.content.decode("utf-8"),
            }
        )

    def last(self, method: str) -> Recorded:
        """The most recent request whose JSON-RPC method is `method`."""
        for rec in reversed(self.requests):
            if rec["body"] and json.loads(rec["body"]).get("method") == method:
                return rec
        raise LookupError(method)


# ------------------------------------------------------------------------------ event shapes


def http_api_event(rec: Recorded, n: int, *, claims: dict[str, str] | None = None) -> dict[str, Any]:
    """The HTTP API (payload 2.0) event for a recorded request."""
    headers = _gateway_headers(rec, API_DOMAIN, n)
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": API_ID,
        "domainName": API_DOMAIN,
        "domainPrefix": API_ID,
        "http": _http(rec, headers),
        "requestId": f"Rv{n:06d}ExAmPlE=",
        "routeKey": f"{rec['method']} {rec['path']}",
        "stage": "$default",
        "time": "28/Jul/2026:12:00:00 +0000",
        "timeEpoch": TIME_EPOCH_MS + n,
    }
    if claims is not None:
        context["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    return _event(rec, headers, context, f"{rec['method']} {rec['path']}")


def function_url_event(rec: Recorded, n: int) -> dict[str, Any]:
    """The Lambda Function URL event (also payload 2.0) for a recorded request."""
    headers = _gateway_headers(rec, URL_DOMAIN, n)
    headers["x-amzn-tls-version"] = "TLSv1.3"
    headers["x-amzn-tls-cipher-suite"] = "TLS_AES_128_GCM_SHA256"
    context = {
        "accountId": "anonymous",
        "apiId": URL_ID,
        "domainName": URL_DOMAIN,
        "domainPrefix": URL_ID,
        "http": _http(rec, headers),
        "requestId": f"6f1c2d3e-0000-4000-8000-{n:012d}",
        "routeKey": "$default",
        "stage": "$default",
        "time": "28/Jul/2026:12:00:00 +0000",
        "timeEpoch": TIME_EPOCH_MS + n,
    }
    return _event(rec, headers, context, "$default")


def _gateway_headers(rec: Recorded, domain: str, n: int) -> dict[str, str]:
    headers = {k: v for k, v in rec["headers"].items() if k not in DROPPED_HEADERS}
    headers["host"] = domain
    headers["x-amzn-trace-id"] = f"Root=1-68877a40-{n:024x}"
    headers["x-forwarded-for"] = "203.0.113.10"
    headers["x-forwarded-port"] = "443"
    headers["x-forwarded-proto"] = "https"
    return dict(sorted(headers.items()))


def _http(rec: Recorded, headers: dict[str, str]) -> dict[str, str]:
    return {
        "method": rec["method"],
        "path": rec["path"],
        "protocol": "HTTP/1.1",
        "sourceIp": "203.0.113.10",
        "userAgent": headers.get("user-agent", ""),
    }


def _event(rec: Recorded, headers: dict[str, str], context: dict[str, Any], route: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": rec["path"],
        "rawQueryString": rec.get("query", ""),
        "headers": headers,
        "requestContext": context,
        "isBase64Encoded": False,
    }
    if rec["body"]:
        event["body"] = rec["body"]
    return event


def write(name: str, event: dict[str, Any]) -> None:
    """Write one event as `events/<name>.json`."""
    path = EVENTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(event, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(EVENTS.parent)}")


# ------------------------------------------------------------------------------ scenarios

Scenario = Callable[[Client], Awaitable[None]]


async def tool_calls(client: Client) -> None:
    """One call of every tool, each argument set what an agent would plausibly send."""
    written = await client.call_tool(
        "memory_write",
        {
            "content": "The user prefers pnpm over npm for JavaScript projects.",
            "type": "semantic",
            "importance": 4,
            "confidence": 0.9,
            "tags": ["tooling", "lang:javascript"],
            "session_id": "session-42",
        },
    )
    assert written.structured_content is not None, written
    memory_id = written.structured_content["memory"]["id"]
    await client.call_tool(
        "memory_write",
        {
            "content": "Deployed v2 to staging; the rollback needed a manual schema migration.",
            "type": "episodic",
            "session_id": "session-42",
        },
    )
    await client.call_tool("memory_search", {"query": "does the user prefer pnpm or npm?", "top_k": 5})
    await client.call_tool("memory_get", {"memory_id": memory_id})
    await client.call_tool("memory_update", {"memory_id": memory_id, "importance": 5, "tags": ["tooling"]})
    await client.call_tool("memory_history", {"memory_id": memory_id})
    await client.call_tool("memory_stats", {})
    await client.call_tool("memory_summarize", {"session_id": "session-42"})
    await client.call_tool("memory_forget", {"ids": [memory_id]})


TOOLS = (
    "memory_write",
    "memory_search",
    "memory_get",
    "memory_update",
    "memory_history",
    "memory_stats",
    "memory_summarize",
    "memory_forget",
)


async def run_client(url: str, mode: str, key: str, scenario: Scenario) -> Recorder:
    """Run `scenario` with the official client in `mode`; returns what it sent."""
    recorder = Recorder()
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, event_hooks={"request": [recorder.on_request]}
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        await scenario(client)
    return recorder


def tool_call_records(recorder: Recorder) -> dict[str, Recorded]:
    """The first `tools/call` request of each tool, by tool name."""
    calls: dict[str, Recorded] = {}
    for rec in recorder.requests:
        message = json.loads(rec["body"]) if rec["body"] else {}
        if message.get("method") == "tools/call":
            calls.setdefault(message["params"]["name"], rec)
    return calls


async def record(url: str) -> None:
    """Drive every scenario against `url` and write the HTTP events."""
    n = 0

    def next_n() -> int:
        nonlocal n
        n += 1
        return n

    async def list_and_call(client: Client) -> None:
        await client.list_tools()
        await tool_calls(client)

    # 2025-11-25: initialize handshake, then requests carrying the mcp-protocol-version header.
    legacy = await run_client(url, "legacy", TENANT_A_KEY, list_and_call)
    write("mcp-2025-11-25/initialize", http_api_event(legacy.last("initialize"), next_n()))
    write(
        "mcp-2025-11-25/notifications-initialized",
        http_api_event(legacy.last("notifications/initialized"), next_n()),
    )
    write("mcp-2025-11-25/tools-list", http_api_event(legacy.last("tools/list"), next_n()))
    for tool, rec in tool_call_records(legacy).items():
        write(f"mcp-2025-11-25/tools-call-{tool}", http_api_event(rec, next_n()))

    # 2026-07-28: no handshake; every request carries _meta and the mcp-method/mcp-name headers.
    modern = await run_client(url, "2026-07-28", TENANT_A_KEY, list_and_call)
    write("mcp-2026-07-28/tools-list", http_api_event(modern.last("tools/list"), next_n()))
    for tool, rec in tool_call_records(modern).items():
        write(f"mcp-2026-07-28/tools-call-{tool}", http_api_event(rec, next_n()))
    probe = await run_client(url, "auto", TENANT_A_KEY, lambda c: c.list_tools())
    write("mcp-2026-07-28/server-discover", http_api_event(probe.last("server/discover"), next_n()))

    async def search_only(client: Client) -> None:
        await client.call_tool("memory_search", {"query": "does the user prefer pnpm or npm?"})

    # Tenant B searching (isolation), a JWT-authorized call, and the Function URL shape.
    other = await run_client(url, "2026-07-28", TENANT_B_KEY, search_only)
    write(
        "mcp-2026-07-28/tools-call-memory_search-tenant-b", http_api_event(other.last("tools/call"), next_n())
    )
    jwt_token = _example_jwt(JWT_CLAIMS)
    jwt_rec = dict(modern.last("tools/list"))
    jwt_rec["headers"] = {**jwt_rec["headers"], "authorization": f"Bearer {jwt_token}"}
    write("jwt/tools-list", http_api_event(jwt_rec, next_n(), claims=JWT_CLAIMS))
    jwt_write = dict(tool_call_records(modern)["memory_write"])
    jwt_write["headers"] = {**jwt_write["headers"], "authorization": f"Bearer {jwt_token}"}
    write("jwt/tools-call-memory_write", http_api_event(jwt_write, next_n(), claims=JWT_CLAIMS))
    write("function-url/initialize", function_url_event(legacy.last("initialize"), next_n()))
    write(
        "function-url/tools-call-memory_search",
        function_url_event(tool_call_records(modern)["memory_search"], next_n()),
    )

    # Plain HTTP: GET/DELETE (405), no or wrong credentials (401), the public metadata route.
    base = modern.last("tools/list")
    get = {"method": "GET", "path": "/mcp", "headers": _without_body(base["headers"]), "body": ""}
    get["headers"]["accept"] = "text/event-stream"
    write("http/get-mcp", http_api_event(get, next_n()))
    delete = {"method": "DELETE", "path": "/mcp", "headers": _without_body(base["headers"]), "body": ""}
    write("http/delete-mcp", http_api_event(delete, next_n()))
    anonymous = {**base, "headers": {k: v for k, v in base["headers"].items() if k != "authorization"}}
    write("http/post-mcp-no-credentials", http_api_event(anonymous, next_n()))
    wrong = {**base, "headers": {**base["headers"], "authorization": "Bearer rv-not-a-valid-key"}}
    write("http/post-mcp-wrong-key", http_api_event(wrong, next_n()))
    metadata = {
        "method": "GET",
        "path": "/.well-known/oauth-protected-resource",
        "headers": {"accept": "application/json", "user-agent": base["headers"].get("user-agent", "")},
        "body": "",
    }
    write("http/get-protected-resource-metadata", http_api_event(metadata, next_n()))


def _without_body(headers: dict[str, str]) -> dict[str, str]:
    skip = {"content-length", "content-type", "mcp-method", "mcp-name"}
    return {k: v for k, v in headers.items() if k not in skip}


def _example_jwt(claims: dict[str, str]) -> str:
    """A JWT-shaped string (unsigned): API Gateway validates real tokens before the function runs."""

    def part(data: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT', 'kid': 'example'})}.{part(claims)}.ZXhhbXBsZS1zaWduYXR1cmU"


# ------------------------------------------------------------------------------ non-HTTP events


def write_non_http_events() -> None:
    """The scheduled-job and DynamoDB stream events."""
    write("jobs/decay", {"job": "decay"})
    write("jobs/archive", {"job": "archive"})
    write("jobs/reconcile", {"job": "reconcile", "tenant": "tenant-a"})
    write("stream/ttl-remove", stream_event())


def stream_event() -> dict[str, Any]:
    """A DynamoDB Streams batch: a TTL-expired memory, a TTL-expired lookup item, a user delete."""
    from datetime import UTC, datetime

    from rearview.backends.dynamodb.codec import memory_to_item
    from rearview.models import WriteRequest
    from rearview.shared.clock import ManualClock

    clock = ManualClock(datetime(2026, 1, 5, 9, 30, tzinfo=UTC))
    service = build_service(Settings.load(store="memory", index="memory", embedder="hashing"), clock=clock)
    result = service.write(
        "tenant-a",
        WriteRequest(content="Working note: the staging DB password rotates on Fridays.", type="working",
                     session_id="session-7", ttl_days=1),
    )  # fmt: skip
    memory = service.store.get("tenant-a", result.memory.id)
    assert memory is not None
    image = memory_to_item(memory)
    lookup_image = {
        "pk": {"S": f"T#tenant-a#HASH#{memory.scope_key}#{memory.content_hash}"},
        "sk": {"S": f"M#{memory.id}"},
        "item_type": {"S": "hash_lookup"},
        "memory_id": {"S": memory.id},
        "expires_at": image["expires_at"],
    }
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/rearview-memories/stream/2026-07-28T00:00:00.000"
    ttl = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

    def record(seq: str, old: dict[str, Any], identity: dict[str, str] | None) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "eventID": f"c81e728d9d4c2f636f067f89cc14{seq[-4:]}",
            "eventName": "REMOVE",
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": 1767691800,
                "Keys": {"pk": old["pk"], "sk": old["sk"]},
                "OldImage": old,
                "SequenceNumber": seq,
                "SizeBytes": len(json.dumps(old)),
                "StreamViewType": "NEW_AND_OLD_IMAGES",
            },
            "eventSourceARN": arn,
        }
        if identity is not None:
            rec["userIdentity"] = identity
        return rec

    return {
        "Records": [
            record("4421584500000000017450439091", image, ttl),
            record("4421584500000000017450439092", lookup_image, ttl),
            record("4421584500000000017450439093", image, None),
        ]
    }


# ------------------------------------------------------------------------------ main


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    """Serve the app, record, write every event."""
    settings = Settings.load(store="memory", index="memory", embedder="hashing")
    service = build_service(settings)
    resolver = ApiKeyResolver({hash_key(k): Principal(t) for k, t in TENANTS.items()}, default_tenant=None)
    app = create_app(service, resolver, host="127.0.0.1")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            print("uvicorn did not start", file=sys.stderr)
            return 1
        time.sleep(0.05)
    try:
        asyncio.run(record(f"http://127.0.0.1:{port}/mcp"))
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    write_non_http_events()
    return 0


if __name__ == "__main__":
    sys.exit(main())
