"""Consolidation: abstractive summaries and contradiction judgements by a language model.

Both are optional. Without a `LanguageModel`, or when it fails or answers something unusable,
summaries stay extractive (`summarize.extractive_summary`: the sources' own statements) and
contradiction handling stays explicit (`supersedes` on `memory_write`). A model failure never
fails a write or a summary: it is logged and the fallback answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rearview.errors import BackendError
from rearview.limits import MAX_CONTENT_CHARS
from rearview.models import Memory
from rearview.ports import LanguageModel, Vector
from rearview.service.write.summarize import SUMMARY_BUDGET_CHARS, extractive_summary
from rearview.shared.clock import to_iso

log = logging.getLogger(__name__)

SUMMARY_SYSTEM = (
    "You consolidate an AI agent's long-term memories. Given memories from one session or period, "
    "write one self-contained paragraph that keeps every durable fact, decision, outcome and lesson, "
    "with their dates, and drops chit-chat and repetition. Use only what the memories state; never add "
    "facts. Write plain prose in the memories' language, without a preamble or headings."
)
CONTRADICTION_SYSTEM = (
    "You check an AI agent's memories for contradictions. Two statements contradict when both cannot be "
    "true at the same time about the same subject: a changed preference, a corrected fact, an updated "
    "status. Statements that are merely different, more specific, or about different subjects do not "
    'contradict. Answer with JSON only: {"contradicts": true or false, "reason": "<one sentence>"}.'
)
SUMMARY_MAX_TOKENS = 700
JUDGE_MAX_TOKENS = 150


@dataclass(frozen=True, slots=True)
class Summary:
    """A consolidated statement and how it was made (`model_id` is None for extractive)."""

    content: str
    method: Literal["abstractive", "extractive", "agent"]
    model_id: str | None = None


@dataclass(frozen=True, slots=True)
class Judgement:
    """A model's verdict on whether a new statement contradicts an older memory."""

    contradicts: bool
    reason: str
    model_id: str


class Consolidator:
    """Summaries and contradiction checks: by `llm` when given, else extractive / never."""

    def __init__(self, llm: LanguageModel | None = None) -> None:
        self.llm = llm

    @property
    def can_judge(self) -> bool:
        """True when a model is configured to judge contradictions."""
        return self.llm is not None

    def summarize(self, memories: Sequence[Memory], vectors: Vector, label: str) -> Summary:
        """One statement consolidating `memories` (any order), within `MAX_CONTENT_CHARS`.

        Abstractive when a model is configured and answers usable text; otherwise extractive.
        Both start with the same header (label, date range, number of sources).
        """
        ordered = sorted(memories, key=lambda m: (m.event_time, m.id))
        if self.llm is not None:
            header = _header(ordered, label)
            try:
                text = self.llm.complete(SUMMARY_SYSTEM, _summary_prompt(ordered), SUMMARY_MAX_TOKENS)
            except BackendError as exc:
                log.warning("abstractive summary failed, falling back to extractive: %s", exc)
            else:
                body = " ".join(text.split())
                if body and len(header) + len(body) <= MAX_CONTENT_CHARS:
                    return Summary(header + body, "abstractive", self.llm.model_id)
                log.warning("abstractive summary unusable (%d characters), falling back", len(body))
        return Summary(extractive_summary(memories, vectors, label), "extractive")

    def judge(self, new_content: str, old: Memory) -> Judgement | None:
        """Whether `new_content` contradicts `old`; None without a model or without a usable answer."""
        if self.llm is None:
            return None
        prompt = (
            f"Older memory (recorded {to_iso(old.event_time)[:10]}):\n{old.content}\n\n"
            f"New memory:\n{new_content}\n\nDoes the new memory contradict the older one?"
        )
        try:
            answer = self.llm.complete(CONTRADICTION_SYSTEM, prompt, JUDGE_MAX_TOKENS)
        except BackendError as exc:
            log.warning("contradiction check skipped: %s", exc)
            return None
        verdict = _parse_verdict(answer)
        if verdict is None:
            log.warning("contradiction check skipped: unparseable answer %r", answer[:200])
            return None
        return Judgement(verdict[0], verdict[1], self.llm.model_id)


def _header(memories: Sequence[Memory], label: str) -> str:
    start, end = memories[0].event_time, memories[-1].event_time
    return f"Summary of {label} ({to_iso(start)[:10]} to {to_iso(end)[:10]}, {len(memories)} memories): "


def _summary_prompt(memories: Sequence[Memory]) -> str:
    lines = [
        f"- [{to_iso(m.event_time)[:10]} | {m.type.value} | importance {m.importance}] {m.content}"
        for m in memories
    ]
    return (
        f"Memories, oldest first:\n{chr(10).join(lines)}\n\n"
        f"Write the consolidated paragraph in at most {SUMMARY_BUDGET_CHARS} characters."
    )


def _parse_verdict(answer: str) -> tuple[bool, str] | None:
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(answer[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("contradicts"), bool):
        return None
    return data["contradicts"], str(data.get("reason", "")).strip()
