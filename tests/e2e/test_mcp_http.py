"""The official `mcp` client against the real HTTP endpoint, in both protocol eras."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.server import running_server
from tests.mcp_client import MODES, call, call_error, connect

TOOLS = {
    "memory_write",
    "memory_ingest",
    "memory_search",
    "memory_get",
    "memory_update",
    "memory_forget",
    "memory_history",
    "memory_stats",
    "memory_summarize",
    "memory_restore",
}


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with running_server(tmp_path / "data") as u:
        yield u


@pytest.mark.parametrize("mode", MODES)
async def test_tools_round_trip(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        by_name = {t.name: t for t in listed.tools}
        assert by_name["memory_search"].annotations.read_only_hint is False  # recall reinforces
        assert by_name["memory_get"].annotations.read_only_hint is True
        assert by_name["memory_forget"].annotations.destructive_hint is True
        assert by_name["memory_write"].output_schema is not None
        assert "description" in by_name["memory_write"].input_schema["properties"]["content"]

        written = await call(
            client, "memory_write", {"content": "User prefers tabs over spaces", "tags": ["style"]}
        )
        assert written["action"] == "created"
        memory_id = written["id"]
        assert (await call(client, "memory_write", {"content": "user prefers tabs over spaces."}))[
            "action"
        ] == "merged"

        raw = await client.call_tool("memory_search", {"query": "tabs or spaces?"})
        found = raw.structured_content
        assert found is not None and found["results"][0]["id"] == memory_id
        assert found["results"][0]["event_time"].endswith("Z")
        context = raw.content[0].text  # type: ignore[union-attr]
        assert "current situation wins" in context and f"id {memory_id} " in context
        assert found["token_estimate"] > 0

        updated = await call(
            client, "memory_update", {"memory_id": memory_id, "content": "User prefers spaces now"}
        )
        assert updated["version"] == 3
        forgotten = await call(client, "memory_forget", {"ids": [memory_id]})
        assert forgotten["forgotten"] == [memory_id]
        history = await call(client, "memory_history", {"memory_id": memory_id})
        assert [e["action"] for e in history["events"]] == ["created", "merged", "updated", "forgotten"]
        stats = await call(client, "memory_stats", {})
        assert stats["by_status"] == {"deleted": 1}

        prompt = await client.get_prompt("memory_guidelines")
        assert "memory_search" in prompt.messages[0].content.text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_bad_input_is_a_clear_error_and_writes_nothing(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        cases = [
            (
                "memory_write",
                {"content": "x", "type": "bogus"},
                "type",
                "'working', 'episodic', 'semantic' or 'procedural'",
            ),
            ("memory_write", {"content": "x", "importance": 9}, "importance", "less than or equal to 5"),
            ("memory_write", {"content": "   "}, "content", "must not be empty"),
            ("memory_search", {"query": "x", "top_k": 10000}, "top_k", "less than or equal to 50"),
            ("memory_get", {"memory_id": "01NOPE"}, "01NOPE", "not found"),
            ("memory_write", {"content": "x", "event_time": "yesterday"}, "event_time", "ISO-8601"),
        ]
        for tool, args, field, message in cases:
            text = await call_error(client, tool, args)
            assert field in text and message in text, text
        assert (await call(client, "memory_stats", {}))["total"] == 0


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_arguments_are_refused_and_advertised_as_forbidden(url: str, mode: str) -> None:
    async with connect(url, mode) as client:
        listed = await client.list_tools()
        assert all(t.input_schema.get("additionalProperties") is False for t in listed.tools)
        await call(client, "memory_write", {"content": "Deploys go through CI", "session_id": "s1"})

        text = await call_error(
            client, "memory_forget", {"session_id": "s1", "type": "working", "hard": True}
        )
        assert "invalid_input: invalid `type`: unknown argument; did you mean `types`?" in text, text
        text = await call_error(client, "memory_write", {"content": "my secret", "visiblity": "private"})
        assert "invalid_input" in text and "did you mean `visibility`?" in text, text
        assert (await call(client, "memory_stats", {}))["total"] == 1

        with pytest.raises(MCPError, match="invalid_input: invalid `topic`: unknown argument"):
            await client.get_prompt("memory_guidelines", {"topic": "x"})


async def test_malformed_json_rpc_and_get_are_answered(url: str) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        bad = await http.post(url, content=b"{not json", headers=headers)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
        get = await http.get(url)
        assert get.status_code == 405 and get.headers["allow"] == "POST"


async def test_the_root_says_where_mcp_is_without_a_key(keyed: str) -> None:
    """A person opening the server's address gets a pointer, not a 404 or a 401 (no browser here)."""
    async with httpx.AsyncClient(timeout=5) as http:
        root = await http.get(keyed.removesuffix("/mcp") + "/")
        assert root.status_code == 200 and root.headers["content-type"].startswith("text/plain")
        assert "/mcp" in root.text and "/ui" in root.text
        assert (await http.post(keyed.removesuffix("/mcp") + "/", json={})).status_code != 200


@pytest.mark.parametrize("request_id", [{"x": 1}, [1], True, None, 1.5])
async def test_a_request_whose_id_is_not_a_string_or_integer_is_refused_not_dropped(
    url: str, request_id: object
) -> None:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    async with httpx.AsyncClient(timeout=5) as http:
        refused = await http.post(url, json=message, headers=headers)
        assert refused.status_code == 400  # was 202, as for a notification, and never executed
        assert refused.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request: `id` must be a string or an integer"},
        }
        for good_id in (7, "seven"):
            answered = await http.post(url, json={**message, "id": good_id}, headers=headers)
            assert answered.status_code == 200 and answered.json()["id"] == good_id
            assert answered.json()["result"]["tools"]


async def test_memory_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running_server(data) as url:
        async with connect(url, "legacy") as client:
            memory_id = (await call(client, "memory_write", {"content": "The staging DB is on port 5433"}))[
                "id"
            ]
    with running_server(data) as url:
        async with connect(url, "2026-07-28") as client:
            assert (await call(client, "memory_get", {"memory_id": memory_id}))["content"].endswith("5433")
            found = await call(client, "memory_search", {"query": "staging database port"})
            assert found["results"][0]["id"] == memory_id


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "config.toml"
    config.write_text('[api_keys]\n"key-alice" = "alice"\n"key-bob" = "bob"\n')
    with running_server(tmp_path / "data", config_file=config) as u:
        yield u


@pytest.mark.parametrize("mode", MODES)
async def test_tenants_never_see_each_other(keyed: str, mode: str) -> None:
    async with connect(keyed, mode, "key-alice") as alice, connect(keyed, mode, "key-bob") as bob:
        secret = await call(
            alice, "memory_write", {"content": "Alice's API token rotates Fridays", "tags": ["ops"]}
        )
        memory_id = secret["id"]
        assert (await call(bob, "memory_search", {"query": "API token rotates Fridays"}))["results"] == []
        assert "not found" in await call_error(bob, "memory_get", {"memory_id": memory_id})
        assert "not found" in await call_error(bob, "memory_history", {"memory_id": memory_id})
        assert "not found" in await call_error(
            bob, "memory_update", {"memory_id": memory_id, "content": "pwned"}
        )
        assert "not found" in await call_error(bob, "memory_forget", {"ids": [memory_id]})
        assert (await call(bob, "memory_forget", {"tags": ["ops"]}))["forgotten"] == []
        assert (await call(bob, "memory_stats", {}))["total"] == 0
        profile = await bob.read_resource("memory://profile/default")
        assert "token" not in profile.contents[0].text  # type: ignore[union-attr]
        assert (await call(alice, "memory_get", {"memory_id": memory_id}))["status"] == "active"


async def test_missing_or_wrong_key_gets_a_plain_bearer_challenge(keyed: str) -> None:
    """API-key mode: a 401 that names no metadata URL, and no metadata to start an OAuth flow from."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient(timeout=5) as http:
        missing = await http.post(keyed, json=body)
        wrong = await http.post(keyed, json=body, headers={"Authorization": "Bearer wrong"})
        assert missing.status_code == wrong.status_code == 401
        assert missing.headers["www-authenticate"] == 'Bearer realm="rearview"'
        assert wrong.headers["www-authenticate"] == 'Bearer realm="rearview", error="invalid_token"'
        meta_url = keyed.replace("/mcp", "/.well-known/oauth-protected-resource")
        assert (
            (await http.get(meta_url)).status_code == (await http.get(f"{meta_url}/mcp")).status_code == 404
        )
        assert json.loads((await http.get(keyed.replace("/mcp", "/healthz"))).text)["status"] == "ok"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", [None, "wrong"])
async def test_the_python_sdk_without_a_valid_key_gets_a_401_and_no_oauth_flow(
    keyed: str, mode: str, key: str | None
) -> None:
    seen: list[httpx2.Response] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response)

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with pytest.raises(ExceptionGroup) as refused:  # the SDK raises from inside its task groups
        async with (
            httpx2.AsyncClient(headers=headers, timeout=10, event_hooks={"response": [record]}) as http,
            Client(streamable_http_client(keyed, http_client=http), mode=mode) as client,
        ):
            await client.list_tools()
    assert refused.group_contains(MCPError)  # the SDK's stand-in for a non-JSON-RPC error response
    assert [(r.request.method, r.url.path, r.status_code) for r in seen] == [("POST", "/mcp", 401)]
    expected = 'Bearer realm="rearview"' + (', error="invalid_token"' if key else "")
    assert seen[0].headers["www-authenticate"] == expected


@pytest.mark.parametrize("mode", MODES)
async def test_the_python_sdk_with_the_key_connects(keyed: str, mode: str) -> None:
    async with connect(keyed, mode, "key-alice") as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
