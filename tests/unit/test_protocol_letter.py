"""Issue 33 item 4, the protocol to the letter: raw JSON-RPC over HTTP against the ASGI app, both eras.

- An unknown tool or prompt is JSON-RPC -32602 (was an `isError` result; code 0 or -32603).
- A `cursor` the server never issued is -32602 on every paginated list (was ignored).
- 2025-03-26 is no longer negotiated (its batches are not served): `initialize` counter-offers
  the newest handshake version, its header is refused, and a batch is a one-line -32600.
- A duplicate JSON key at any depth is refused before the SDK parses the body (last one won).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from rearview.api.app import create_app
from rearview.api.auth import ApiKeyResolver
from rearview.config.settings import hash_key
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from tests.asgi_lifespan import lifespan

MODERN = "2026-07-28"
ERAS = ["2025-06-18", "2025-11-25", MODERN]
HEADERS = {
    "accept": "application/json, text/event-stream",
    "authorization": "Bearer sk-a",
    "content-type": "application/json",
}
PAGINATED = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]


@asynccontextmanager
async def serving(service: MemoryService) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the whole app (tenant `t1`, key `sk-a`), its lifespan running.

    A context manager, not a fixture: the lifespan's task group must close in the task that opened it.
    """
    app = create_app(service, ApiKeyResolver({hash_key("sk-a"): Principal("t1")}, None), host="0.0.0.0")
    async with (
        lifespan(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client,
    ):
        yield client


def message(era: str, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A request in `era` and its headers (2026-07-28: the `_meta` envelope and routing headers)."""
    headers = {**HEADERS, "mcp-protocol-version": era}
    if era == MODERN:
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {**params, "_meta": envelope}
        headers["mcp-method"] = method
        if "name" in params:
            headers["mcp-name"] = params["name"]
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, headers


async def rpc(http: httpx.AsyncClient, era: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC reply to one request (any HTTP status: the 2026 era answers errors 400)."""
    body, headers = message(era, method, params)
    reply: dict[str, Any] = (await http.post("/mcp", json=body, headers=headers)).json()
    assert reply["id"] == 7, reply
    return reply


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_tool_is_invalid_params_not_a_tool_result(service: MemoryService, era: str) -> None:
    async with serving(service) as http:
        reply = await rpc(http, era, "tools/call", {"name": "memory_nope", "arguments": {}})
        assert reply["error"] == {"code": -32602, "message": "Unknown tool: memory_nope"}
        known = await rpc(http, era, "tools/call", {"name": "memory_stats", "arguments": {}})
        assert known["result"]["isError"] is False


@pytest.mark.parametrize("era", ERAS)
async def test_an_unknown_prompt_is_invalid_params(service: MemoryService, era: str) -> None:
    async with serving(service) as http:
        reply = await rpc(http, era, "prompts/get", {"name": "nope"})
        assert reply["error"] == {"code": -32602, "message": "Unknown prompt: nope"}
        known = await rpc(http, era, "prompts/get", {"name": "memory_guidelines"})
        assert known["result"]["messages"]


async def test_a_long_unknown_name_is_quoted_cut(service: MemoryService) -> None:
    async with serving(service) as http:
        reply = await rpc(http, "2025-11-25", "tools/call", {"name": "x" * 5000, "arguments": {}})
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == "Unknown tool: " + "x" * 64 + "..."


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("method", PAGINATED)
async def test_a_cursor_never_issued_is_invalid_params(service: MemoryService, era: str, method: str) -> None:
    async with serving(service) as http:
        reply = await rpc(http, era, method, {"cursor": "bogus"})
        assert reply["error"]["code"] == -32602
        assert "cursor" in reply["error"]["message"]
        assert "result" in await rpc(http, era, method, {})  # no cursor: the one and only page


@pytest.mark.parametrize(
    ("asked", "negotiated"), [("2025-03-26", "2025-11-25"), ("2025-06-18", "2025-06-18")]
)
async def test_2025_03_26_is_not_negotiated(service: MemoryService, asked: str, negotiated: str) -> None:
    async with serving(service) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": asked,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        reply = (await http.post("/mcp", json=init, headers=HEADERS)).json()
        assert reply["result"]["protocolVersion"] == negotiated


async def test_a_request_sent_as_2025_03_26_is_refused(service: MemoryService) -> None:
    async with serving(service) as http:
        list_tools = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        refused = await http.post(
            "/mcp", json=list_tools, headers={**HEADERS, "mcp-protocol-version": "2025-03-26"}
        )
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert refused.json()["id"] == 3 and error["code"] == -32022
        assert error["message"] == (
            "Unsupported protocol version 2025-03-26; served: 2024-11-05, 2025-06-18, 2025-11-25, 2026-07-28"
        )
        unversioned = await http.post("/mcp", json=list_tools, headers=HEADERS)  # the spec's default: served
        assert unversioned.status_code == 200 and unversioned.json()["result"]["tools"]


@pytest.mark.parametrize("era", [*ERAS, "2025-03-26", None])
@pytest.mark.parametrize(
    "body", [[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], [], 42, "tools/list"]
)
async def test_a_batch_or_bare_value_is_a_one_line_invalid_request(
    service: MemoryService, era: str | None, body: object
) -> None:
    async with serving(service) as http:
        headers = {**HEADERS, "mcp-protocol-version": era} if era else HEADERS
        refused = await http.post("/mcp", json=body, headers=headers)
        assert refused.status_code == 400
        assert refused.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid Request: the body must be one JSON-RPC message (a JSON object), never a batch",
            },
        }


@pytest.mark.parametrize("era", ERAS)
async def test_a_duplicate_key_is_refused_before_anything_runs(service: MemoryService, era: str) -> None:
    async with serving(service) as http:
        body, headers = message(era, "tools/call", {"name": "memory_stats", "arguments": {"content": "x"}})
        text = json.dumps(body).replace(
            '"name": "memory_stats"', '"name": "memory_stats", "name": "memory_write"'
        )
        if era == MODERN:  # the routing header names what the SDK's parser would see: the last value
            headers["mcp-name"] = "memory_write"
        refused = await http.post("/mcp", content=text, headers=headers)
        assert refused.status_code == 400
        assert refused.json()["error"] == {
            "code": -32600,
            "message": 'Invalid Request: duplicate key "name" in a JSON object',
        }
        assert service.stats("t1").total == 0  # memory_write never ran


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "tools/list"}', "id"),
        (
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write", '
            '"arguments": {"content": "a", "metadata": {"k": [{"deep": 1, "deep": 2}]}}}}',
            "deep",
        ),
        ('[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"a\\"b": 1, "a\\"b": 1}]', 'a"b'),
    ],
)
async def test_a_duplicate_key_at_any_depth_is_named(service: MemoryService, text: str, key: str) -> None:
    async with serving(service) as http:
        refused = await http.post(
            "/mcp", content=text, headers={**HEADERS, "mcp-protocol-version": "2025-11-25"}
        )
        assert refused.status_code == 400
        assert refused.json()["error"] == {
            "code": -32600,
            "message": f"Invalid Request: duplicate key {json.dumps(key)} in a JSON object",
        }
