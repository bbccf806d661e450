"""What every tool module shares: the caller, the argument types, and `ToolsBase` that runs a call.

The tenant comes from the authenticated request (`api/auth.py`), never from an argument; so does
the agent when the credential is bound to one (`agent_of`), else it is the `agent_id` argument.
The argument types carry the limits of `models.py` (advertised in the input schemas) plus the
description the model reads.
"""

# No `from __future__ import annotations`: the SDK reads the tools' signatures at registration time.
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from rearview.api.auth import AGENT_STATE_KEY, TENANT_STATE_KEY
from rearview.api.tools.lanes import Lanes
from rearview.errors import AuthenticationError, InvalidInputError
from rearview.limits import (
    AgentIdText,
    Cues,
    Labels,
    MemoryId,
    SessionIdText,
    TimestampText,
)
from rearview.models import DEFAULT_AGENT, MemoryFilter, MemoryStatus, MemoryType, MemoryTypes
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import parse_time

T = TypeVar("T")

# Argument types: the limits of `models.py` (advertised in the input schemas) plus what the model reads.
AgentId = Annotated[
    AgentIdText | None,
    Field(description="Default: your key's agent."),
]
SessionId = Annotated[SessionIdText | None, Field(description="The conversation/session id, if any.")]
Tags = Annotated[Labels, Field(description="Labels, e.g. ['project:rearview'].")]
Types = Annotated[MemoryTypes | None, Field(description="Only these types.")]
TimeFrom = Annotated[TimestampText | None, Field(description="ISO-8601 UTC; events from this on.")]
TimeTo = Annotated[
    TimestampText | None,
    Field(description="ISO-8601 UTC; events up to this."),
]
MemoryIdArg = Annotated[MemoryId, Field(description="The memory's id.")]
CuesArg = Annotated[
    Cues | None,
    Field(description="Up to 5 short questions or phrases it answers."),
]

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
)


def _auth_state(ctx: Context) -> dict[str, Any]:
    """What `TenantAuth` established for the current request (empty if it did not run)."""
    state = getattr(ctx.request_context.request, "scope", {}).get("state", {})
    return state if isinstance(state, dict) else {}


def tenant_of(ctx: Context) -> str:
    """The authenticated tenant of the current request."""
    tenant = _auth_state(ctx).get(TENANT_STATE_KEY)
    if not tenant:
        raise AuthenticationError("no authenticated tenant on this request")
    return str(tenant)


def agent_of(ctx: Context, claimed: str | None) -> str:
    """The agent a call acts as: the credential's bound agent, else `claimed`, else the default agent.

    A credential bound to an agent acts as that agent only: a `claimed` agent that differs is an
    InvalidInputError on `agent_id` (the credential is valid, the argument is what is wrong).
    """
    bound = _auth_state(ctx).get(AGENT_STATE_KEY)
    if bound is None:
        return DEFAULT_AGENT if claimed is None else claimed
    if claimed is not None and claimed != bound:
        raise InvalidInputError(
            "agent_id", f"this credential is bound to agent `{bound}`: omit `agent_id` or pass `{bound}`"
        )
    return str(bound)


def is_agent_bound(ctx: Context) -> bool:
    """Whether the credential is bound to an agent: it may then change only what that agent wrote."""
    return _auth_state(ctx).get(AGENT_STATE_KEY) is not None


def time_arg(value: str | None, field: str) -> datetime | None:
    """An optional ISO-8601 argument as a time (InvalidInputError naming `field` if it is not one)."""
    return parse_time(value, field) if value else None


def filter_of(
    session_id: str | None,
    types: list[MemoryType] | None,
    tags: list[str] | None,
    time_from: str | None,
    time_to: str | None,
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,),
) -> MemoryFilter:
    """The filter that search and forget build from their shared tool arguments (the service scopes it)."""
    return MemoryFilter(
        session_id=session_id, types=tuple(types) if types else None,
        tags=tuple(tags) if tags else None, time_from=time_arg(time_from, "time_from"),
        time_to=time_arg(time_to, "time_to"), statuses=statuses,
    )  # fmt: skip


class ToolsBase:
    """One `MemoryService` and the lanes its calls run in: what every capability's tools build on.

    Each capability module adds its tools as methods of a subclass; `registry.MemoryTools` joins them.
    """

    def __init__(self, service: MemoryService, lanes: Lanes | None = None) -> None:
        self.service = service
        self.lanes = lanes or Lanes.build(service)

    async def _call(self, ctx: Context, fn: Callable[[], T]) -> T:
        """Blocking service code, off the event loop, in the write lane as the request's tenant."""
        return await self.lanes.writes.run(tenant_of(ctx), fn)
