"""The tools that recall: `memory_search`, `memory_get`, `memory_history`.

`memory_search` runs in its own lane (`Lanes.search`), sized for CPU-bound searches; the lookups by
id run in the write lane like every other tool.
"""

# No `from __future__ import annotations`: the SDK reads these signatures at registration time.
from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from rearview.api.outputs import SearchOutput, search_result, structured
from rearview.api.tools.base import (
    AgentId,
    MemoryIdArg,
    TimeFrom,
    TimeTo,
    ToolsBase,
    Types,
    agent_of,
    filter_of,
    tenant_of,
    time_arg,
)
from rearview.limits import Alternatives, Labels, QueryText, SessionIdText, TimestampText, TopK
from rearview.models import MemoryStatus, SearchRequest


class RecallTools(ToolsBase):
    """Searching memories and reading one memory and its history."""

    async def memory_search(
        self,
        ctx: Context,
        query: Annotated[
            QueryText,
            Field(description="Question or keywords."),
        ],
        alternatives: Annotated[
            Alternatives | None,
            Field(description="Other phrasings, searched too."),
        ] = None,
        top_k: Annotated[TopK, Field(description="How many memories.")] = 10,
        types: Types = None,
        tags: Annotated[Labels | None, Field(description="Only memories with all these tags.")] = None,
        session_id: Annotated[
            SessionIdText | None, Field(description="Only this session's memories.")
        ] = None,
        time_from: TimeFrom = None,
        time_to: TimeTo = None,
        min_score: Annotated[float, Field(ge=0, description="Drop scores below this.")] = 0.0,
        include_superseded: Annotated[bool, Field(description="Also return outdated memories.")] = False,
        include_archived: Annotated[
            bool,
            Field(description="Also match archived memories."),
        ] = False,
        reference_time: Annotated[
            TimestampText | None,
            Field(description="ISO-8601 UTC 'now' of 'last week', 'yesterday'."),
        ] = None,
        as_of: Annotated[
            TimestampText | None, Field(description="ISO-8601 UTC: what was believed then.")
        ] = None,
        explain: Annotated[bool, Field(description="Also return each `why`.")] = False,
        agent_id: AgentId = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Recall relevant memories before acting: at a task's start, before asking the user what
        they may have told you, before retrying a failed approach. Add `alternatives`: how a note would
        word it, and the user's other language. Returns memories best first in a context block."""
        statuses = (
            (MemoryStatus.ACTIVE,)
            + ((MemoryStatus.SUPERSEDED,) if include_superseded else ())
            + ((MemoryStatus.ARCHIVED,) if include_archived else ())
        )
        flt = filter_of(session_id, types, tags, time_from, time_to, statuses)
        req = SearchRequest(
            query=query, filter=flt, top_k=top_k, min_score=min_score, agent_id=agent_of(ctx, agent_id),
            reference_time=time_arg(reference_time, "reference_time"), alternatives=alternatives,
            as_of=time_arg(as_of, "as_of"),
        )  # fmt: skip
        found = await self.lanes.search.run(tenant_of(ctx), partial(self.service.search, tenant_of(ctx), req))
        return search_result(found, explain)

    async def memory_get(
        self, ctx: Context, memory_id: MemoryIdArg, agent_id: AgentId = None
    ) -> CallToolResult:
        """Fetch one memory by id, with all its fields (any status)."""
        return structured(
            await self._call(
                ctx, partial(self.service.get, tenant_of(ctx), memory_id, agent_of(ctx, agent_id))
            )
        )

    async def memory_history(
        self, ctx: Context, memory_id: MemoryIdArg, agent_id: AgentId = None
    ) -> CallToolResult:
        """Why does the agent believe this? Every change to a memory, oldest first, with before/after."""
        return structured(
            await self._call(
                ctx, partial(self.service.history, tenant_of(ctx), memory_id, agent_of(ctx, agent_id))
            )
        )
