"""An MCP request context for calling tools in process, carrying what `TenantAuth` would have set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context

from rearview.api.auth import AGENT_STATE_KEY, TENANT_STATE_KEY


@dataclass
class _Request:
    scope: dict[str, Any] = field(default_factory=dict)


@dataclass
class _RequestContext:
    request: _Request


def tool_context(tenant_id: str | None = "t1", agent_id: str | None = None) -> Context:
    """A context whose ASGI scope state names `tenant_id` (none when None) and a bound `agent_id`."""
    state: dict[str, Any] = {} if tenant_id is None else {TENANT_STATE_KEY: tenant_id}
    if agent_id is not None:
        state[AGENT_STATE_KEY] = agent_id
    return Context(request_context=_RequestContext(_Request({"state": state})))  # type: ignore[arg-type]
