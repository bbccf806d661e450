"""The tools that take in conversations: `memory_ingest` (raw turns) and `memory_summarize`.

`memory_ingest` runs in the ingest lane, `cancellable`: a caller that goes away stops it between
messages. `memory_summarize` consolidates what a session left into one linked summary.
"""

# No `from __future__ import annotations`: the SDK reads these signatures at registration time.
from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rearview.api.outputs import structured, summary_receipt
from rearview.api.tools.base import (
    AgentId,
    TimeFrom,
    TimeTo,
    ToolsBase,
    agent_of,
    is_agent_bound,
    tenant_of,
    time_arg,
)
from rearview.api.tools.lanes import cancellable
from rearview.limits import (
    MAX_CONTENT_CHARS,
    MAX_INGEST_CHARS,
    MAX_INGEST_MESSAGES,
    ContentText,
    NameText,
    SessionIdText,
    TimestampText,
    invalid_input,
)
from rearview.models import IngestMessage, IngestRequest, MemoryType, Visibility


class MessageArg(BaseModel):
    """One message of `memory_ingest` as the model sends it (timestamps as ISO-8601 text)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    content: Annotated[
        ContentText,
        Field(
            description=f"What was said, verbatim; stored as '<speaker>: <content>', {MAX_CONTENT_CHARS} "
            f"characters in all ({MAX_CONTENT_CHARS - len('user: ')} for 'user')."
        ),
    ]
    speaker: Annotated[
        NameText | None, Field(description="Who said it, by name (e.g. 'Alice'); default: `role`.")
    ] = None
    name: Annotated[NameText | None, Field(description="Same as `speaker` (OpenAI's field).")] = None
    role: Annotated[NameText | None, Field(description="user, assistant, ... when there is no name.")] = None
    timestamp: Annotated[
        TimestampText | None, Field(description="ISO-8601 UTC time it was said (default: now).")
    ] = None
    message_id: Annotated[
        NameText | None, Field(description="Your message id: a re-sent one is stored once.")
    ] = None

    def message(self, field: str) -> IngestMessage:
        """The service's message, its timestamp parsed (InvalidInputError naming `field` and the key)."""
        try:
            return IngestMessage(
                content=self.content, speaker=self.speaker or self.name, role=self.role,
                timestamp=time_arg(self.timestamp, f"{field}.timestamp"), message_id=self.message_id,
            )  # fmt: skip
        except ValidationError as exc:
            raise invalid_input(exc, field) from None


class IngestTools(ToolsBase):
    """Ingesting conversation turns and summarizing a session."""

    async def memory_ingest(
        self,
        ctx: Context,
        messages: Annotated[
            list[MessageArg],
            Field(
                min_length=1,
                max_length=MAX_INGEST_MESSAGES,
                description=f"The messages in the order said ({MAX_INGEST_CHARS} characters of content "
                "in all; send a long chat in parts).",
            ),
        ],
        session_id: Annotated[
            SessionIdText, Field(description="The conversation/session these messages are from.")
        ],
        agent_id: AgentId = None,
        visibility: Annotated[Visibility, Field(description="shared (all agents) or private (only you).")] = (
            Visibility.SHARED
        ),
    ) -> CallToolResult:
        """Hand over raw conversation turns and let memory decide what to keep: each message is stored as
        an event of the session, its facts, events and lessons as memories. Call it with the new turns at
        the end of an exchange; re-sending stores nothing twice."""
        req = IngestRequest(
            messages=[m.message(f"messages[{i}]") for i, m in enumerate(messages)],
            session_id=session_id, agent_id=agent_of(ctx, agent_id), visibility=visibility,
        )  # fmt: skip
        return structured(
            await cancellable(
                self.lanes.ingests,
                tenant_of(ctx),
                partial(self.service.ingest, tenant_of(ctx), req),
                ctx.request_context.request,
            )
        )

    async def memory_summarize(
        self,
        ctx: Context,
        session_id: Annotated[
            SessionIdText | None, Field(description="Consolidate this session's memories.")
        ] = None,
        time_from: TimeFrom = None,
        time_to: TimeTo = None,
        type: Annotated[MemoryType, Field(description="Type of the summary memory.")] = MemoryType.EPISODIC,
        summary: Annotated[
            ContentText | None,
            Field(description="Your own consolidation of the session: decisions, plans, facts, dates."),
        ] = None,
        agent_id: AgentId = None,
    ) -> CallToolResult:
        """Consolidate a session's (or time range's) episodic memories into one linked summary. Call at the
        end of a long session, with `summary` = your consolidation; without it you get an offline extract
        and the sources, to write yours."""
        agent = agent_of(ctx, agent_id)
        call = partial(
            self.service.summarize, tenant_of(ctx), session_id=session_id,
            time_from=time_arg(time_from, "time_from"), time_to=time_arg(time_to, "time_to"),
            summary_type=type, agent_id=agent, agent_bound=is_agent_bound(ctx), summary=summary,
        )  # fmt: skip
        return structured(summary_receipt(await self._call(ctx, call)))
