"""Credentials bound to an agent: then the agent comes from the credential, as the tenant does.

`[api_keys]` entries may be `{ tenant = ..., agent = ... }` tables; `TenantAuth` passes the bound
agent down; every tool (and the profile resource) acts as that agent and refuses an `agent_id`
argument naming another one. Unbound credentials keep taking the agent from the argument.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult
from starlette.types import Receive, Scope, Send

from rearview.api.app import build_mcp
from rearview.api.auth import AGENT_STATE_KEY, TENANT_STATE_KEY, ApiKeyResolver, TenantAuth
from rearview.config.settings import Settings, hash_key
from rearview.errors import ConfigurationError
from rearview.models import MemoryFilter, MemoryStatus, MemoryType, Visibility, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.principal import Principal
from tests.tool_context import tool_context

BOUND, OTHER = "claude-code", "cursor"


@pytest.fixture
def mcp(service: MemoryService) -> MCPServer[Any]:
    return build_mcp(service)


async def _call(mcp: MCPServer[Any], tool: str, args: dict[str, Any], agent: str | None) -> CallToolResult:
    result = await mcp.call_tool(tool, args, tool_context("t1", agent))
    assert isinstance(result, CallToolResult)
    return result


async def _refusal(mcp: MCPServer[Any], tool: str, args: dict[str, Any], agent: str | None) -> str:
    """The message of the tool error a call gets (in process, `call_tool` raises what a client would read)."""
    with pytest.raises(ToolError) as raised:
        await mcp.call_tool(tool, args, tool_context("t1", agent))
    return str(raised.value).removeprefix(f"Error executing tool {tool}: ")


# ------------------------------------------------------------------------------------ tools


async def test_a_bound_credential_acts_as_its_agent(mcp: MCPServer[Any], service: MemoryService) -> None:
    for args in ({}, {"agent_id": BOUND}):
        result = await _call(
            mcp, "memory_write", {"content": f"Note {len(args)}", "visibility": "private", **args}, BOUND
        )
        assert result.structured_content is not None
        memory_id = result.structured_content["id"]
        assert service.get("t1", memory_id, BOUND).agent_id == BOUND


def _tool_calls(memory_id: str) -> dict[str, dict[str, Any]]:
    """One valid call of every tool that takes `agent_id`, on `memory_id` where it takes an id."""
    return {
        "memory_write": {"content": "A new fact"},
        "memory_ingest": {"messages": [{"role": "user", "content": "A new turn"}], "session_id": "s1"},
        "memory_search": {"query": "secret"},
        "memory_get": {"memory_id": memory_id},
        "memory_update": {"memory_id": memory_id, "content": "Rewritten"},
        "memory_forget": {"ids": [memory_id], "hard": True},
        "memory_restore": {"memory_id": memory_id},
        "memory_history": {"memory_id": memory_id},
        "memory_summarize": {"session_id": "s1"},
    }


@pytest.mark.parametrize("tool", list(_tool_calls("x")))
async def test_a_bound_credential_refuses_any_other_agent_id(
    mcp: MCPServer[Any], service: MemoryService, tool: str
) -> None:
    req = WriteRequest(
        content="The secret is in vault", agent_id=OTHER, visibility=Visibility.PRIVATE,
        type=MemoryType.EPISODIC, session_id="s1",
    )  # fmt: skip
    private = service.write("t1", req).memory
    args = {**_tool_calls(private.id)[tool], "agent_id": OTHER}

    message = await _refusal(mcp, tool, args, BOUND)

    assert message.startswith(
        "invalid_input: invalid `agent_id`: this credential is bound to agent `claude-code`"
    )
    everything = MemoryFilter(statuses=tuple(MemoryStatus))
    assert [m.view() for m in service.store.list_memories("t1", everything).items] == [
        private
    ]  # nothing changed


async def test_a_bound_credential_may_not_restore_what_another_agent_forgot(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    """Issue 45.8: `memory_restore` refuses, as `memory_forget` does, another agent's memory."""
    retracted = service.write("t1", WriteRequest(content="The deploy window is 02:00", agent_id=OTHER)).memory
    await _call(mcp, "memory_forget", {"ids": [retracted.id]}, OTHER)

    message = await _refusal(mcp, "memory_restore", {"memory_id": retracted.id}, BOUND)

    assert message.startswith(f"not_permitted: memory `{retracted.id}` was written by agent `{OTHER}`")
    assert service.get("t1", retracted.id, OTHER).status is MemoryStatus.DELETED
    restored = await _call(mcp, "memory_restore", {"memory_id": retracted.id}, OTHER)
    assert restored.structured_content is not None


async def test_an_unbound_credential_takes_the_agent_from_the_argument_or_the_default(
    mcp: MCPServer[Any],
) -> None:
    for args, agent in (({"agent_id": OTHER}, OTHER), ({}, "default")):
        result = await _call(mcp, "memory_write", {"content": f"Fact for {agent}", **args}, None)
        assert result.structured_content is not None
        assert result.structured_content["agent_id"] == agent


async def test_the_profile_resource_of_a_bound_credential_is_its_agents_only(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    service.write(
        "t1", WriteRequest(content="Cursor's user likes tea", agent_id=OTHER, visibility=Visibility.PRIVATE)
    )
    with pytest.raises(ResourceError, match="invalid_input: invalid `agent_id`"):
        await mcp.read_resource(f"memory://profile/{OTHER}", tool_context("t1", BOUND))
    [own] = await mcp.read_resource(f"memory://profile/{BOUND}", tool_context("t1", BOUND))
    assert own.content == "# Profile\n\n(nothing known yet)\n"


async def test_the_listing_of_a_bound_credential_is_what_its_agent_may_see(
    mcp: MCPServer[Any], service: MemoryService
) -> None:
    service.write(
        "t1", WriteRequest(content="Cursor's user likes tea", agent_id=OTHER, visibility=Visibility.PRIVATE)
    )
    with pytest.raises(ResourceError, match="invalid_input: invalid `agent_id`"):
        await mcp.read_resource(f"memory://memories?agent_id={OTHER}", tool_context("t1", BOUND))
    [own] = await mcp.read_resource("memory://memories", tool_context("t1", BOUND))
    assert json.loads(str(own.content)) == {"items": [], "cursor": None, "agent_id": BOUND}  # whose view
    [other] = await mcp.read_resource(f"memory://memories?agent_id={OTHER}", tool_context("t1", None))
    assert [m["content"] for m in json.loads(str(other.content))["items"]] == ["Cursor's user likes tea"]


# ------------------------------------------------------------------------------ middleware


async def _state_after_auth(resolver: ApiKeyResolver, key: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.update(scope["state"])

    scope = {"type": "http", "path": "/mcp", "headers": [(b"authorization", f"Bearer {key}".encode())]}
    await TenantAuth(app, resolver)(scope, None, None)  # type: ignore[arg-type]
    return seen


async def test_tenant_auth_passes_the_bound_agent_down_and_none_for_an_unbound_key() -> None:
    resolver = ApiKeyResolver(
        {hash_key("bound"): Principal("alice", BOUND), hash_key("plain"): Principal("alice")}, None
    )
    assert await _state_after_auth(resolver, "bound") == {TENANT_STATE_KEY: "alice", AGENT_STATE_KEY: BOUND}
    assert await _state_after_auth(resolver, "plain") == {TENANT_STATE_KEY: "alice", AGENT_STATE_KEY: None}


# ------------------------------------------------------------------------------ config.toml


def _keys(tmp_path: Path, body: str) -> dict[str, Principal]:
    config = tmp_path / "config.toml"
    config.write_text(body, encoding="utf-8")
    return Settings.load(data_dir=tmp_path, config_file=config).api_keys()


def test_config_keys_map_to_a_tenant_or_to_a_tenant_and_agent(tmp_path: Path) -> None:
    keys = _keys(
        tmp_path,
        '[api_keys]\n"plain" = "alice"\n"bound" = { tenant = "alice", agent = "claude-code" }\n'
        f'"{hash_key("hashed")}" = {{ tenant = "bob" }}\n',
    )
    assert keys == {
        hash_key("plain"): Principal("alice"),
        hash_key("bound"): Principal("alice", BOUND),
        hash_key("hashed"): Principal("bob"),
    }


@pytest.mark.parametrize(
    "entry",
    [
        '""',
        "7",
        '{ agent = "claude-code" }',
        '{ tenant = "alice", agent = "" }',
        '{ tenant = "alice", agent = 3 }',
    ],
)
def test_a_malformed_config_key_entry_is_refused_by_position_never_by_key(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ConfigurationError, match=r"\[api_keys\] entry 2 must map to a tenant id") as info:
        _keys(tmp_path, f'[api_keys]\n"fine" = "alice"\n"the-secret-key" = {entry}\n')
    assert "the-secret-key" not in str(info.value)


def test_a_misspelt_field_in_a_bound_key_is_named_never_the_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigurationError, match=r"unknown `api_keys.<key>.agnet` \(did you mean `api_keys.<key>.agent`"
    ) as info:
        _keys(tmp_path, '[api_keys]\n"the-secret-key" = { tenant = "alice", agnet = "claude-code" }\n')
    assert "the-secret-key" not in str(info.value)
