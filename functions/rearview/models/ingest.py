"""`memory_ingest`'s request and result: a conversation's messages, and what each one became."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rearview.limits import (
    MAX_INGEST_CHARS,
    MAX_INGEST_MESSAGES,
    MAX_LABEL_CHARS,
    AgentIdText,
    ContentText,
    LabelText,
    SessionIdText,
    ValidRequest,
    Visible,
    text_problem,
)
from rearview.models.memory import DEFAULT_AGENT, Visibility


class IngestMessage(BaseModel):
    """One message of a conversation as `memory_ingest` receives it.

    `speaker` is who said it (a name); `role` (`user`, `assistant`, ...) stands in when there is no
    name: at least one is required. `timestamp` is when it was said (else the time of ingest).
    `message_id` is the caller's id of the message, what makes re-sending it a no-op.
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    content: ContentText
    role: Annotated[str | None, Visible] = None
    speaker: Annotated[str | None, Visible, Field(validate_default=True)] = None
    timestamp: datetime | None = None
    message_id: LabelText | None = None

    @field_validator("speaker")
    @classmethod
    def _someone_said_it(cls, speaker: str | None, info: ValidationInfo) -> str | None:
        """Who said it, `speaker` or else `role`, must be a label (the field named is `speaker`)."""
        said_by = (speaker or info.data.get("role") or "").strip()
        problem = text_problem(said_by, MAX_LABEL_CHARS)
        if problem:
            raise ValueError(problem)
        return speaker

    @property
    def said_by(self) -> str:
        """Who said it: the speaker's name, else the role."""
        return (self.speaker or self.role or "").strip()


class IngestRequest(ValidRequest):
    """Input of `MemoryService.ingest`: a conversation's messages, in the order they were said.

    1..`MAX_INGEST_MESSAGES` messages of at most `MAX_INGEST_CHARS` characters of content together.
    """

    messages: list[IngestMessage]
    session_id: SessionIdText
    agent_id: AgentIdText = DEFAULT_AGENT
    visibility: Visibility = Visibility.SHARED

    @field_validator("messages")
    @classmethod
    def _one_call_of_a_conversation(cls, messages: list[IngestMessage]) -> list[IngestMessage]:
        if not 1 <= len(messages) <= MAX_INGEST_MESSAGES:
            raise ValueError(f"has {len(messages)} items; give 1 to {MAX_INGEST_MESSAGES} per call")
        total = sum(len(m.content) for m in messages)
        if total > MAX_INGEST_CHARS:
            raise ValueError(f"has {total} characters of content; the limit is {MAX_INGEST_CHARS} per call")
        return messages


class ExtractionMode(StrEnum):
    """How an ingest decided what to remember from a message."""

    RULES = "rules"  # offline: the message itself (episodic) + explicit self-statements (semantic)
    LLM = "llm"  # REARVIEW_LLM: the message itself (episodic) + what a language model extracted
    FALLBACK = "fallback"  # the language model failed: the messages themselves only (`fallback_reason`)


class MessageOutcome(BaseModel):
    """What one ingested message became. Ids, by what the write path did with each memory.

    `replayed`: memories an earlier ingest of the same message already wrote (nothing changed).
    """

    model_config = ConfigDict(defer_build=True)

    index: int
    message_id: str | None = None
    memory_id: str
    """The message's episodic memory (created, merged into, or written by an earlier ingest)."""
    mode: ExtractionMode
    created: list[str] = Field(default_factory=list)
    merged: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)
    replayed: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    """The semantic statements extracted from the message (each one is among the ids above)."""


class RefusedMessage(BaseModel):
    """A message of an ingest that was not stored (it holds a credential); the call's others were."""

    model_config = ConfigDict(defer_build=True)

    index: int
    message_id: str | None = None
    field: str
    """The field refused, as an error names it (`messages[2].content`)."""
    reason: str


class IngestResult(BaseModel):
    """Output of `memory_ingest`: one outcome per stored message, in order, and the totals."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    mode: ExtractionMode
    messages: list[MessageOutcome]
    created: int
    merged: int
    superseded: int
    replayed: int
    indexed: bool = True
    """False when some memory could not be indexed (it is stored; `rearview reindex` repairs)."""
    fallback_reason: str | None = None
    """Why the language model's extraction was not used (`mode` is `fallback`), else None."""
    dropped_items: int = 0
    """Items the language model extracted but cited no message of the call for (not written)."""
    cancelled: bool = False
    """The caller cancelled: `messages` lists those stored before it stopped (whole chunks); re-send
    the call to store the rest (what is stored replays)."""
    refused: list[RefusedMessage] = Field(default_factory=list)
    """Messages not stored because a field of theirs holds a credential (`REARVIEW_SECRETS`); the
    others are (they have no outcome in `messages`)."""
