"""The tools that change memories: `memory_write`, `memory_update`, `memory_forget`, `memory_restore`.

Each builds the service's request from its arguments (the caller's agent from `agent_of`; a
credential bound to an agent may change only what that agent wrote) and runs it in the write lane.
"""

# No `from __future__ import annotations`: the SDK reads these signatures at registration time.
from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from rearview.api.outputs import WriteReceipt, structured, write_receipt
from rearview.api.tools.base import (
    AgentId,
    CuesArg,
    SessionId,
    Tags,
    TimeFrom,
    TimeTo,
    ToolsBase,
    Types,
    agent_of,
    filter_of,
    is_agent_bound,
    tenant_of,
    time_arg,
)
from rearview.limits import (
    MAX_IMPORTANCE,
    MIN_IMPORTANCE,
    Confidence,
    ContentText,
    Cues,
    FlatMetadata,
    IdempotencyKeyText,
    Importance,
    Labels,
    MemoryId,
    MemoryIds,
    SessionIdText,
    TimestampText,
    TtlDays,
)
from rearview.models import ForgetRequest, MemoryType, UpdateRequest, Visibility, WriteRequest


class WritingTools(ToolsBase):
    """Writing, editing, forgetting and restoring memories."""

    async def memory_write(
        self,
        ctx: Context,
        content: Annotated[
            ContentText,
            Field(description="One distilled statement."),
        ],
        type: Annotated[
            MemoryType,
            Field(
                description="semantic: fact/preference; episodic: event; procedural: how-to/lesson; "
                "working: scratch."
            ),
        ] = MemoryType.SEMANTIC,
        importance: Annotated[
            Importance,
            Field(description=f"{MIN_IMPORTANCE} trivial .. {MAX_IMPORTANCE} critical (kept forever)."),
        ] = 3,
        confidence: Annotated[Confidence, Field(description="How sure you are.")] = 1.0,
        tags: Tags | None = None,
        entities: Annotated[Labels | None, Field(description="People, projects, tools it is about.")] = None,
        metadata: Annotated[FlatMetadata | None, Field(description="Flat key -> scalar.")] = None,
        event_time: Annotated[TimestampText | None, Field(description="ISO-8601 UTC event time.")] = None,
        ttl_days: Annotated[TtlDays | None, Field(description="Days until forgotten.")] = None,
        supersedes: Annotated[MemoryId | None, Field(description="Older memory's id it corrects.")] = None,
        idempotency_key: Annotated[IdempotencyKeyText | None, Field(description="Retry-safe key.")] = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        visibility: Annotated[Visibility, Field(description="shared (all agents) or private (you).")] = (
            Visibility.SHARED
        ),
        cues: CuesArg = None,
    ) -> Annotated[CallToolResult, WriteReceipt]:
        """Remember what matters later: a preference, fact, decision, event, or lesson learned.
        Add `cues`: a question it answers in other words, the same in the user's other language, a short
        topic. Duplicates merge (another agent's: `corroborated`). `conflicts`: older memories it
        contradicts; rewrite with `supersedes` to retire one."""
        req = WriteRequest(
            content=content, type=type, importance=importance, confidence=confidence, tags=tags or [],
            entities=entities or [], metadata=metadata or {}, event_time=time_arg(event_time, "event_time"),
            ttl_days=ttl_days, supersedes=supersedes, idempotency_key=idempotency_key,
            agent_id=agent_of(ctx, agent_id), session_id=session_id, visibility=visibility, cues=cues or [],
        )  # fmt: skip
        return structured(
            write_receipt(await self._call(ctx, partial(self.service.write, tenant_of(ctx), req)))
        )

    async def memory_update(
        self,
        ctx: Context,
        memory_id: Annotated[MemoryId, Field(description="The memory to change.")],
        content: Annotated[ContentText | None, Field(description="New content.")] = None,
        tags: Annotated[Labels | None, Field(description="New tags.")] = None,
        importance: Annotated[Importance | None, Field(description="New importance.")] = None,
        confidence: Annotated[Confidence | None, Field(description="New confidence.")] = None,
        metadata: Annotated[FlatMetadata | None, Field(description="New metadata.")] = None,
        event_time: Annotated[TimestampText | None, Field(description="ISO-8601 UTC event time.")] = None,
        ttl_days: Annotated[TtlDays | None, Field(description="Lifetime from now, days.")] = None,
        expected_version: Annotated[int | None, Field(description="Fail unless this version.")] = None,
        cues: Annotated[Cues | None, Field(description="Replacement cues ([]: none).")] = None,
        verified: Annotated[bool | None, Field(description="true: checked, still holds.")] = None,
        agent_id: AgentId = None,
    ) -> CallToolResult:
        """Edit a memory in place (history keeps the old). For a fact that changed, prefer memory_write
        `supersedes`."""
        req = UpdateRequest(
            memory_id=memory_id, content=content, tags=tags, importance=importance, confidence=confidence,
            metadata=metadata, event_time=time_arg(event_time, "event_time"), ttl_days=ttl_days,
            expected_version=expected_version, agent_id=agent_of(ctx, agent_id),
            agent_bound=is_agent_bound(ctx), cues=cues, verified=verified,
        )  # fmt: skip
        return structured(await self._call(ctx, partial(self.service.update, tenant_of(ctx), req)))

    async def memory_forget(
        self,
        ctx: Context,
        ids: Annotated[MemoryIds | None, Field(description="Memory ids to forget.")] = None,
        session_id: Annotated[
            SessionIdText | None, Field(description="Forget this session's memories.")
        ] = None,
        types: Types = None,
        tags: Annotated[Labels | None, Field(description="Forget memories carrying all these tags.")] = None,
        time_from: TimeFrom = None,
        time_to: TimeTo = None,
        hard: Annotated[bool, Field(description="Also erase history and archive (irreversible).")] = False,
        agent_id: AgentId = None,
    ) -> CallToolResult:
        """Forget memories that are wrong, obsolete, or that the user asked you to forget. Soft by default
        (kept in history); `hard` erases everything."""
        flt = None if ids else filter_of(session_id, types, tags, time_from, time_to)
        req = ForgetRequest(
            ids=ids or [],
            filter=flt,
            hard=hard,
            agent_id=agent_of(ctx, agent_id),
            agent_bound=is_agent_bound(ctx),
        )
        return structured(await self._call(ctx, partial(self.service.forget, tenant_of(ctx), req)))

    async def memory_restore(
        self,
        ctx: Context,
        memory_id: Annotated[
            MemoryId,
            Field(description="An archived or soft-forgotten memory's id."),
        ],
        agent_id: AgentId = None,
    ) -> CallToolResult:
        """Bring back an archived memory that memory_search found with include_archived, or undo a soft
        memory_forget."""
        restore = partial(
            self.service.restore, tenant_of(ctx), memory_id, agent_of(ctx, agent_id),
            agent_bound=is_agent_bound(ctx),
        )  # fmt: skip
        return structured(await self._call(ctx, restore))
