"""`rearview ingest`: read a conversation from a file and hand it to `MemoryService.ingest` in calls.

Two shapes are read:

- a chat transcript, one JSON object with `messages` (the OpenAI and Anthropic request shape):
  `{"messages": [{"role": "user", "content": "..."}, ...]}`, where `content` may be a string or
  a list of content blocks, of which the `{"type": "text", "text": ...}` ones are kept (joined by
  line breaks); a top-level JSON array of messages is read the same way;
- JSON Lines, one message object per line.

A message has `content` and `speaker` (or OpenAI's `name`) and/or `role`; optionally `timestamp`
(ISO-8601) and `message_id` (or `id`). System and developer messages (the prompt, not the
conversation) and messages without text (tool calls, images) are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rearview.cli.console import counts, plural, printable
from rearview.errors import InvalidInputError
from rearview.importers.detect import refuse_export
from rearview.importers.records import TOO_DEEP, read_text
from rearview.limits import MAX_INGEST_CHARS, MAX_INGEST_MESSAGES, invalid_input
from rearview.models import IngestMessage, IngestRequest, Visibility, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.text import content_runs

__all__ = ["PROMPT_ROLES", "Conversation", "IngestRun", "calls", "read_conversation", "to_message"]

PROMPT_ROLES = frozenset({"system", "developer"})
"""Roles whose messages are instructions to the model, not turns of the conversation."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """The messages read from a file, in order, and how many were skipped (prompt or no text)."""

    messages: list[IngestMessage]
    skipped: int


def read_conversation(path: Path) -> Conversation:
    """The messages of a transcript or JSON Lines file; InvalidInputError naming the line or message."""
    text = read_text(path)  # UTF-8 or refused naming the file, as the importers read
    try:
        whole: Any = json.loads(text)
    except json.JSONDecodeError:
        whole = None  # not one JSON document: JSON Lines
    except RecursionError:
        raise InvalidInputError(str(path), TOO_DEEP) from None
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        return _nonempty(path, _convert([(f"messages[{i}]", m) for i, m in enumerate(whole["messages"])]))
    refuse_export(str(path), whole, path)
    if isinstance(whole, list):
        return _nonempty(path, _convert([(f"messages[{i}]", m) for i, m in enumerate(whole)]))
    if isinstance(whole, dict):  # a single line of JSON Lines
        return _nonempty(path, _convert([("line 1", whole)]))
    items = list(_json_lines(text))
    if items:
        refuse_export(str(path), items[0][1], path)
    return _nonempty(path, _convert(items))


def _nonempty(path: Path, conversation: Conversation) -> Conversation:
    """`conversation`, or InvalidInputError naming the file when it holds no message to ingest."""
    if not conversation.messages:
        raise InvalidInputError(
            str(path),
            f"has no message to ingest ({plural(conversation.skipped, 'item')} read, none a message with "
            "text and a `role` or `speaker`, or all prompts): expected a conversation, "
            '{"messages": [{"role": "user", "content": "..."}]} or JSON Lines of messages',
        )
    return conversation


def _json_lines(text: str) -> Iterator[tuple[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"line {number}", f"not JSON ({exc.msg})") from exc
        except RecursionError:
            raise InvalidInputError(f"line {number}", TOO_DEEP) from None


MEMORY_KEYS = frozenset(WriteRequest.model_fields) | {"format", "memory", "history"}
"""Keys of the lines `rearview import` reads (a `WriteRequest`, an export record)."""


def _not_memories(items: Sequence[tuple[str, Any]]) -> None:
    """InvalidInputError when the first item is a memory (a `rearview import` line), not a message."""
    if not items or not isinstance(items[0][1], dict):
        return
    where, first = items[0]
    if {"role", "speaker", "name"} & first.keys() or not first.keys() <= MEMORY_KEYS:
        return
    raise InvalidInputError(
        where,
        "this is not a conversation: it has no `role` or `speaker` and looks like memories "
        "(a WriteRequest or an export record); use `rearview import`",
    )


def _convert(items: Sequence[tuple[str, Any]]) -> Conversation:
    _not_memories(items)
    messages: list[IngestMessage] = []
    skipped = 0
    for where, raw in items:
        message = to_message(raw, where)
        if message is None:
            skipped += 1
        else:
            messages.append(message)
    return Conversation(messages, skipped)


def to_message(raw: Any, where: str = "message") -> IngestMessage | None:
    """One message object as an `IngestMessage`; None for a prompt or a message without text."""
    if not isinstance(raw, dict):
        raise InvalidInputError(where, f"expected a JSON object, got {type(raw).__name__}")
    role = raw.get("role")
    content = _text(raw.get("content"))
    if (isinstance(role, str) and role.casefold() in PROMPT_ROLES) or not content.strip():
        return None
    try:
        return IngestMessage(
            content=content,
            speaker=raw.get("speaker") or raw.get("name"),
            role=role,
            timestamp=raw.get("timestamp"),
            message_id=_message_id(raw.get("message_id", raw.get("id"))),
        )
    except ValidationError as exc:
        raise invalid_input(exc, where) from None


def _message_id(value: Any) -> str | None:
    return None if value is None else str(value)


def _text(content: Any) -> str:
    """A message's text: the string itself, or its text blocks joined by line breaks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block["text"]) for block in content if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def calls(messages: Sequence[IngestMessage]) -> Iterator[list[IngestMessage]]:
    """`messages` in order, cut into runs that each fit one `memory_ingest` call's limits."""
    return content_runs(messages, MAX_INGEST_MESSAGES, MAX_INGEST_CHARS)


class IngestRun:
    """Sends a conversation to one service, one `calls` run at a time, and totals what it did."""

    def __init__(
        self, service: MemoryService, tenant: str, session_id: str, agent_id: str, visibility: Visibility
    ) -> None:
        self.service = service
        self.tenant = tenant
        self.session_id, self.agent_id, self.visibility = session_id, agent_id, visibility
        self.totals = {"created": 0, "merged": 0, "superseded": 0, "replayed": 0}
        self.messages = 0
        self.facts = 0
        self.modes: set[str] = set()
        self.fallbacks: list[str] = []
        self.dropped = 0
        self.indexed = True

    def send(self, messages: list[IngestMessage]) -> None:
        """Ingest one run of messages (at most one call's worth) and add its outcome to the totals."""
        req = IngestRequest(
            messages=messages, session_id=self.session_id, agent_id=self.agent_id, visibility=self.visibility
        )
        result = self.service.ingest(self.tenant, req)
        for name in self.totals:
            self.totals[name] += getattr(result, name)
        self.messages += len(messages)
        self.facts += sum(len(m.facts) for m in result.messages)
        self.modes.add(result.mode.value)
        if result.fallback_reason:
            self.fallbacks.append(result.fallback_reason)
        self.dropped += result.dropped_items
        self.indexed = self.indexed and result.indexed

    def summary(self, skipped: int) -> str:
        """One line: how many messages went where, what the write path did, and any caveat."""
        mode = "/".join(sorted(self.modes)) or "nothing sent"
        line = (
            f"ingested {plural(self.messages, 'message')} into session '{printable(self.session_id)}' "
            f"of tenant '{printable(self.tenant)}' ({mode}): memories {counts(self.totals, 'none')}; "
            f"{plural(self.facts, 'fact')} extracted"
        )
        if skipped:
            line += f"; {plural(skipped, 'message')} skipped (prompt or no text)"
        if self.dropped:
            dropped = plural(self.dropped, "extracted item")
            line += f"; {dropped} dropped (they cited no message of their call)"
        if self.fallbacks:
            line += (
                f"; {plural(len(self.fallbacks), 'call')} kept the messages only, the model's extraction "
                f"failed "
                f"(first: {self.fallbacks[0]}); run the ingest again to retry"
            )
        if not self.indexed:
            line += "; some memories are not indexed (run `rearview reindex`)"
        return line
