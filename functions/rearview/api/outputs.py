"""What the tools hand back: as small as the model needs, the same data as text and as `structuredContent`.

A tool result costs the agent its context. Measured (2026-12, the clients' trackers): Claude Code
and VS Code give the model `structuredContent` (as JSON) when a result has it, other clients give
it the text content; so both are kept small, and carry the same facts.

- `memory_search`: the text is the context block (one escaped record per memory, ids included);
  `structuredContent` holds the hits without the ranking internals (`why` only with `explain`).
  `token_estimate` is what the context block costs, the text an agent injects into a prompt
  (`text.estimate_tokens`: about 4 characters a token, 1 a CJK character); `explain` adds the
  hits' `why` to the structured content only, so it leaves the estimate as it is.
- `memory_write` / `memory_summarize`: a receipt, the id, the action and what else it touched; the
  memory itself is not echoed back (the writer has it; `memory_get` reads it).
- Everything else: the service's model, nulls left out.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from rearview.api.arguments import dump_output
from rearview.models import (
    Conflicting,
    MemorySource,
    MemoryStatus,
    MemoryType,
    SearchHit,
    SearchResult,
    WriteAction,
    WriteResult,
)
from rearview.shared.clock import to_iso
from rearview.text import estimate_tokens


class WriteReceipt(BaseModel):
    """What a write did: `id` is the memory that now holds the content (the merged-into one on a merge).

    It is always a memory the writing agent wrote: a duplicate of another agent's memory is stored as
    the writer's own copy (`corroborated`, `corroborates` naming the other), never merged into it.
    """

    model_config = ConfigDict(defer_build=True)

    action: WriteAction
    id: str
    agent_id: str
    """The agent it was written as (a credential bound to an agent writes as that agent)."""
    status: MemoryStatus = MemoryStatus.ACTIVE
    merged_into: str | None = None
    similarity: float | None = None
    corroborates: str | None = None
    superseded_ids: list[str] = Field(default_factory=list)
    superseded_by: str | None = None
    related_id: str | None = None
    not_merged_because: str | None = None
    conflicts: list[dict[str, str]] | None = None
    """Older memories this write states another value for: `id`, `content`, `written_at` (ISO-8601)."""
    idempotent_replay: bool = False
    indexed: bool = True
    warnings: list[str] | None = None
    """What was stored despite a doubt (content that looks like a credential, under a `warn` setting)."""


class SummarySource(BaseModel):
    """One consolidated memory, compactly: what an agent reads to write its own consolidation."""

    model_config = ConfigDict(defer_build=True)

    id: str
    at: str
    """Its event date (YYYY-MM-DD)."""
    speaker: str | None = None
    content: str


class SummaryReceipt(WriteReceipt):
    """What `memory_summarize` stored: the receipt, the summary's text and whose words it carries.

    `method`: who wrote it (`agent`, `abstractive`, `extractive`). For the offline extract, `sources`
    lists what it consolidated and `next_step` asks the agent for its own consolidation.
    """

    content: str
    source_agents: list[str] = Field(default_factory=list)
    method: str | None = None
    sources: list[SummarySource] | None = None
    next_step: str | None = None


AGENT_SUMMARY_REQUEST = (
    "This summary is an offline extract of the sources' own sentences. Read the sources, write your "
    "consolidation (decisions, plans, numbers, names, dates, outcomes; no small talk) and call "
    "memory_summarize again with the same session_id or time range and `summary` set to it: it "
    "replaces this extract."
)


class HitOutput(BaseModel):
    """One recalled memory as a tool result: what an agent acts on, and its provenance."""

    model_config = ConfigDict(defer_build=True)

    id: str
    content: str
    type: MemoryType
    score: float
    relevance: float
    relevant: bool = True
    """False: a weak match, no likely answer."""
    confidence: float
    importance: int
    event_time: datetime
    source: MemorySource = MemorySource.TOOL
    agent_id: str
    speaker: str | None = None
    source_agents: list[str] | None = None  # a summary's lineage (its speakers: in the context block)
    tags: list[str] = Field(default_factory=list)
    status: MemoryStatus = MemoryStatus.ACTIVE
    related: list[str] = Field(default_factory=list)
    why: dict[str, float | str] | None = None
    """With `explain`: `HitExplanation`'s fields that apply (scores by name; `cue`, `phrasing`). An open
    map in the schema: its 11 typed fields cost every agent ~350 characters of `tools/list` for a
    debugging aid."""


class SearchOutput(BaseModel):
    """`memory_search`'s structured result; the context block is the text content beside it."""

    model_config = ConfigDict(defer_build=True)

    results: list[HitOutput]
    token_estimate: int
    degraded: bool = False
    degraded_reason: str | None = None


def write_receipt(result: WriteResult) -> WriteReceipt:
    """The receipt of a write: its id, action and the memories it touched (not the memory itself)."""
    memory = result.memory
    return WriteReceipt(
        action=result.action, id=memory.id, agent_id=memory.agent_id, status=memory.status,
        merged_into=result.merged_into, similarity=result.similarity, corroborates=result.corroborates,
        superseded_ids=result.superseded_ids, superseded_by=result.superseded_by,
        related_id=result.related_id, not_merged_because=result.not_merged_because,
        conflicts=[conflict_output(c) for c in result.conflicts] or None,
        idempotent_replay=result.idempotent_replay, indexed=result.indexed, warnings=result.warnings,
    )  # fmt: skip


def conflict_output(conflict: Conflicting) -> dict[str, str]:
    """One of a write's `conflicts` as the receipt lists it (a plain map: its schema costs every agent)."""
    return {"id": conflict.id, "content": conflict.content, "written_at": to_iso(conflict.written_at)}


def summary_receipt(result: WriteResult) -> SummaryReceipt:
    """The receipt of a summary: a write's, with the stored text and its lineage.

    With the offline extract's `sources`, they are listed compactly with the request for the agent's
    own consolidation (`AGENT_SUMMARY_REQUEST`).
    """
    memory, sources = result.memory, result.sources
    method = memory.metadata.get("summary_method")
    return SummaryReceipt(
        **write_receipt(result).model_dump(),
        content=memory.content,
        source_agents=memory.source_agents,
        method=None if method is None else str(method),
        sources=None
        if sources is None
        else [
            SummarySource(id=m.id, at=m.event_time.date().isoformat(), speaker=m.speaker, content=m.content)
            for m in sources
        ],
        next_step=AGENT_SUMMARY_REQUEST if sources is not None else None,
    )


def _hit(hit: SearchHit, explain: bool) -> HitOutput:
    return HitOutput(
        id=hit.id, content=hit.content, type=hit.type, score=hit.score, relevance=hit.relevance,
        relevant=hit.relevant,
        confidence=hit.confidence, importance=hit.importance, event_time=hit.event_time,
        source=hit.source, agent_id=hit.agent_id, speaker=hit.speaker, tags=hit.tags,
        source_agents=hit.source_agents or None,
        status=hit.status, related=hit.related,
        why=hit.why.model_dump(exclude_none=True) if explain and hit.why is not None else None,
    )  # fmt: skip


def search_result(result: SearchResult, explain: bool) -> CallToolResult:
    """The search as the tools return it: the context block as text, the hits as structured content.

    `token_estimate` is the context block's cost (the module docstring says why).
    """
    output = SearchOutput(
        results=[_hit(h, explain) for h in result.results], token_estimate=estimate_tokens(result.context),
        degraded=result.degraded, degraded_reason=result.degraded_reason,
    )  # fmt: skip
    data = dump_output(output)
    return CallToolResult(content=[TextContent(type="text", text=result.context)], structured_content=data)


def structured(model: BaseModel) -> CallToolResult:
    """`model` as both contents: compact JSON text and `structuredContent` (nulls left out)."""
    data = dump_output(model)
    return CallToolResult(
        content=[TextContent(type="text", text=_compact_json(data))], structured_content=data
    )


def _compact_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
