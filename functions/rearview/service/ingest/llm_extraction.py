"""Extraction by a language model (`REARVIEW_LLM=bedrock`): a call's messages in, checked facts out.

Prompt: `EXTRACTION_SYSTEM` (one place; `EXTRACTION_PROMPT_VERSION` changes with it and is recorded
on every fact) and the messages, one per line: `[m<i>] <date> (<weekday>) <time> UTC | <speaker>: <text>`,
where `m<i>` is the message's position in the ingest call. The model answers a JSON array of
items `{type, content, importance, entities, source_message_ids, date}` (`ExtractedItem`): durable
facts and preferences (semantic), events with the absolute day they happened, resolved against
the message times ("yesterday" in a message of 2023-05-08 is 2023-05-07; episodic), procedures
and lessons (procedural).

Bounded: a call's messages are cut into chunks of at most `MAX_CHUNK_MESSAGES` messages and
`MAX_CHUNK_CHARS` characters of content, one Converse call each, answered in at most
`EXTRACTION_MAX_TOKENS` tokens (a 200-message ingest call is at most 5 model calls).

All or nothing, checked before anything is written: every chunk's answer is parsed and validated
(pydantic, then the write path's own content and label checks) before `extract` returns. If any
chunk fails (the model call after the client's retries, an answer cut off at `max_tokens`, text
that is not a JSON array, or an item that breaks the schema), the whole call's extraction is
`fallback`, with the reason and no facts: the ingest stores the messages themselves only, and
re-sending the call later extracts again (the messages replay, the facts are new).

Citations: an item citing an id that is not a message of its chunk is dropped and counted
(`Extraction.dropped`); the chunk's other items are kept. A misread id makes that item
untraceable, not the others wrong, and a fact without a source message is never stored.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from rearview.errors import BackendError
from rearview.limits import MAX_LABEL_CHARS, ContentText, Labels, problem_of
from rearview.models import ExtractionMode, MemoryType
from rearview.ports import LanguageModel
from rearview.service.ingest.extraction import Extraction, Fact, Turn
from rearview.text import content_runs

__all__ = [
    "EXTRACTION_PROMPT_VERSION",
    "EXTRACTION_SYSTEM",
    "ExtractedItem",
    "LanguageModelExtractor",
    "chunks",
]

log = logging.getLogger(__name__)

EXTRACTION_PROMPT_VERSION: Final = "extract-v1"
"""Changes whenever `EXTRACTION_SYSTEM` or the prompt layout does; stored on each extracted memory."""
EXTRACTION_SYSTEM: Final = (
    "You decide what an AI agent should remember long-term from a conversation. Read the messages and "
    "extract: durable facts about people and the world, including preferences, plans, relationships and "
    'possessions ("semantic"); events that happened or are planned, each with the day it happened '
    '("episodic"); procedures, instructions and lessons learned ("procedural"). Skip greetings, '
    "chit-chat, questions and anything not stated. Each item is one self-contained statement in the "
    "third person that names people by name (never I, you, he or she), in the messages' language, with "
    "absolute dates instead of relative words: resolve 'yesterday', 'last week', 'next Friday' against the "
    "time of the message that says it. Answer with a JSON array only, no prose and no code fence; each "
    'element: {"type": "semantic" | "episodic" | "procedural", "content": "<statement>", '
    '"importance": <0.0 trivial .. 1.0 vital>, "entities": ["<names of people, places, things>"], '
    '"source_message_ids": ["<ids of the messages it comes from, e.g. m3>"], "date": "YYYY-MM-DD" '
    "for an episodic item (the day of the event), else null}. Answer [] when nothing is worth keeping."
)
EXTRACTION_MAX_TOKENS: Final = 4000
"""The answer's token limit per chunk; an answer cut off there is not used (`fallback`)."""
MAX_CHUNK_MESSAGES: Final = 40
"""Messages per model call: a longer ingest call is extracted in several chunks."""
MAX_CHUNK_CHARS: Final = 16_000
"""Characters of message content per model call (about 4,000 tokens of prompt)."""
EXTRACTED_CONFIDENCE: Final = 0.8
"""Confidence of a model-extracted memory: it rewords and dates what was said, and may misread it."""

_FENCE = re.compile(r"^```(?:json)?\s*(?P<body>.*?)\s*```$", re.DOTALL)


class ExtractedItem(BaseModel):
    """One element of the model's answer, as the prompt asks for it (unknown keys are ignored)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    type: Literal["semantic", "episodic", "procedural"]
    content: ContentText
    importance: float = Field(ge=0.0, le=1.0)
    entities: Labels = Field(default_factory=list)
    source_message_ids: list[str] = Field(min_length=1)
    date: dt.date | None = None


_ANSWER: Final = TypeAdapter(list[ExtractedItem])


class _UnusableAnswerError(Exception):
    """A chunk's answer cannot be used; the message says why (becomes the fallback reason)."""


class LanguageModelExtractor:
    """The `Extractor` of `REARVIEW_LLM`: the module docstring's prompt, chunks and checks."""

    def __init__(self, model: LanguageModel) -> None:
        self.model = model

    @property
    def mode(self) -> ExtractionMode:
        return ExtractionMode.LLM

    def extract(self, turns: Sequence[Turn]) -> Extraction:
        """Every chunk's checked facts, or a `fallback` with no facts when any chunk's answer is unusable."""
        facts: list[Fact] = []
        dropped = 0
        for n, chunk in enumerate(chunks(turns)):
            try:
                kept, lost = self._extract_chunk(chunk)
            except _UnusableAnswerError as exc:
                reason = f"chunk {n + 1} (messages m{chunk[0].index}-m{chunk[-1].index}): {exc}"
                log.warning("extraction fell back to the messages only: %s", reason)
                return Extraction([], ExtractionMode.FALLBACK, reason)
            facts.extend(kept)
            dropped += lost
        return Extraction(facts, ExtractionMode.LLM, dropped=dropped)

    def _extract_chunk(self, chunk: Sequence[Turn]) -> tuple[list[Fact], int]:
        try:
            answer = self.model.answer(EXTRACTION_SYSTEM, prompt(chunk), EXTRACTION_MAX_TOKENS)
        except BackendError as exc:
            raise _UnusableAnswerError(f"the model call failed: {exc}") from exc
        if answer.truncated:
            limit = EXTRACTION_MAX_TOKENS
            raise _UnusableAnswerError(f"the answer was cut off at {limit} tokens (stop reason max_tokens)")
        items = parse_answer(answer.text)
        by_label = {f"m{t.index}": t for t in chunk}
        facts = [fact for item in items if (fact := _fact(item, by_label)) is not None]
        return facts, len(items) - len(facts)


def chunks(turns: Sequence[Turn]) -> Iterator[list[Turn]]:
    """`turns` in order, cut into runs of at most `MAX_CHUNK_MESSAGES` and `MAX_CHUNK_CHARS`."""
    return content_runs(turns, MAX_CHUNK_MESSAGES, MAX_CHUNK_CHARS)


def prompt(chunk: Sequence[Turn]) -> str:
    """The user message for one chunk: its messages, labelled and dated (see the module docstring)."""
    lines = [
        f"[m{t.index}] {t.time.astimezone(UTC):%Y-%m-%d (%A) %H:%M} UTC | {t.speaker}: {t.content}"
        for t in chunk
    ]
    return "Messages, oldest first:\n" + "\n".join(lines) + "\n\nAnswer with the JSON array."


def parse_answer(text: str) -> list[ExtractedItem]:
    """The items of an answer; `_UnusableAnswerError` if it is not a JSON array of valid items.

    One code fence around the array is tolerated (models add it despite the prompt); nothing else.
    Each item's content and entities pass the write path's checks here, before any write.
    """
    fenced = _FENCE.match(text.strip())
    body = fenced["body"] if fenced else text.strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise _UnusableAnswerError(f"the answer is not JSON ({exc.__class__.__name__}: {exc})") from exc
    try:
        items = _ANSWER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise _UnusableAnswerError(f"the answer breaks the schema at {where}: {problem_of(first)}") from exc
    return items


def _fact(item: ExtractedItem, by_label: dict[str, Turn]) -> Fact | None:
    """The item as a fact citing its turns; None if it cites a message that is not in its chunk."""
    cited = [by_label.get(_label(label)) for label in item.source_message_ids]
    sources = [t for t in cited if t is not None]
    if len(sources) < len(cited):
        return None
    last = max(sources, key=lambda t: t.index)
    kind = MemoryType(item.type)
    event_time = _day(item.date, last.time) if kind is MemoryType.EPISODIC else None
    entities = tuple(dict.fromkeys(e for e in item.entities if e and len(e) <= MAX_LABEL_CHARS))
    return Fact(
        content=item.content,
        sources=tuple(sorted({t.index for t in sources})),
        type=kind,
        importance=1 + round(4 * item.importance),
        entities=entities,
        event_time=event_time,
    )


def _label(cited: str) -> str:
    """A cited id as the prompt labels messages: `m3`, also when the model wrote `[m3]` or `3`."""
    label = cited.strip().strip("[]").strip()
    return label if label.startswith("m") else f"m{label}"


def _day(day: date | None, said: datetime) -> datetime:
    """When an event happened: the message's own time on the day it was said, else that day at 00:00 UTC."""
    if day is None or day == said.astimezone(UTC).date():
        return said
    return datetime.combine(day, time(0), tzinfo=UTC)
