"""Agents of one tenant through the official `mcp` client, with API keys bound to agents.

`config.toml` binds one key to `claude-code` and one to `cursor` (same tenant), and keeps an
old-form key (`"key" = "tenant"`). A private memory is unreachable for the other agent on every
path, an agent cannot claim another's id, and idempotency keys do not cross agents.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.e2e.server import running_server
from tests.e2e.test_mcp_http import MODES, call, call_error, connect

CONFIG = """\
[api_keys]
"key-claude" = { tenant = "alice", agent = "claude-code" }
"key-cursor" = { tenant = "alice", agent = "cursor" }
"key-alice" = "alice"
"""


async def refusal(client: Client, tool: str, args: dict[str, Any]) -> str:
    """The tool error's message, without the SDK's `Error executing tool <name>: ` prefix."""
    return (await call_error(client, tool, args)).removeprefix(f"Error executing tool {tool}: ")


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    with running_server(tmp_path / "data", config_file=config) as url:
        yield url


@pytest.mark.parametrize("mode", MODES)
async def test_a_private_memory_is_out_of_reach_of_the_tenants_other_agents(agents: str, mode: str) -> None:
    async with (
        connect(agents, mode, "key-claude") as claude,
        connect(agents, mode, "key-cursor") as cursor,
        connect(agents, mode, "key-alice") as unbound,
    ):
        write = {"content": "Staging password hint: the blue notebook", "visibility": "private"}
        secret = await call(claude, "memory_write", {**write, "idempotency_key": "k1", "tags": ["ops"]})
        memory_id = secret["id"]
        assert secret["agent_id"] == "claude-code"  # from the key, not an argument

        for other in (cursor, unbound):
            for tool, args in (
                ("memory_get", {"memory_id": memory_id}),
                ("memory_history", {"memory_id": memory_id}),
                ("memory_update", {"memory_id": memory_id, "content": "pwned"}),
                ("memory_restore", {"memory_id": memory_id}),
                ("memory_forget", {"ids": [memory_id], "hard": True}),
            ):
                assert (await refusal(other, tool, args)).startswith("not_found:"), tool
            refused = await refusal(other, "memory_write", {"content": "Correction", "supersedes": memory_id})
            assert refused == f"invalid_input: invalid `supersedes`: memory `{memory_id}` not found"
            assert (await call(other, "memory_search", {"query": "staging password hint"}))["results"] == []
            assert (await call(other, "memory_forget", {"tags": ["ops"], "hard": True}))["forgotten"] == []

        replayed = await call(
            cursor, "memory_write", {"content": "Cursor's own note", "idempotency_key": "k1"}
        )
        assert not replayed["idempotent_replay"] and replayed["action"] == "created"
        assert (await call(cursor, "memory_get", {"memory_id": replayed["id"]}))[
            "content"
        ] == "Cursor's own note"

        claimed = await refusal(cursor, "memory_get", {"memory_id": memory_id, "agent_id": "claude-code"})
        assert claimed.startswith(
            "invalid_input: invalid `agent_id`: this credential is bound to agent `cursor`"
        )
        with pytest.raises(MCPError, match="bound to agent `cursor`"):
            await cursor.read_resource("memory://profile/claude-code")

        mine = await call(claude, "memory_get", {"memory_id": memory_id, "agent_id": "claude-code"})
        assert mine["content"] == write["content"]
        again = await call(claude, "memory_write", {"content": "anything", "idempotency_key": "k1"})
        assert again["idempotent_replay"] and again["id"] == memory_id
