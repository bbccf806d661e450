"""The re-rank factors: importance, recency, strength, who (the subject) and when (the temporal factor).

Each factor is in [its floor, 1] (`RankingPolicy`); `ranking`'s docstring says when each applies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from rearview.models import Memory
from rearview.service.search.candidates import Factors
from rearview.service.search.ranking_policy import RankingPolicy
from rearview.service.search.temporal import (
    QuestionTimes,
    asks_for_time,
    matches,
    memory_periods,
    question_times,
    states_time,
)
from rearview.text import tokens

SUBJECT_PREFIX = re.compile(r"^([A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?): ")
"""A speaker prefix, `"Caroline: ..."` or `"Mr Smith: ..."`: whose memory it is."""


def subject_of(memory: Memory) -> str | None:
    """Whose memory it is, casefolded: its content's speaker prefix, else `metadata.speaker`, else None."""
    match = SUBJECT_PREFIX.match(memory.content)
    if match:
        return match.group(1).casefold()
    speaker = memory.metadata.get("speaker")
    if not isinstance(speaker, str):
        return None
    return speaker.strip().casefold() or None


def named_subjects(query: str, known: Iterable[str]) -> list[str]:
    """The known subjects the query names as whole words (a possessive 's counts), sorted."""
    words = " " + " ".join(tokens(query)) + " "  # tokens drop a possessive 's
    return sorted(s for s in known if " " + " ".join(tokens(s)) + " " in words)


def rerank_factors(
    memory: Memory, now: datetime, policy: RankingPolicy, subject: float = 1.0, temporal: float = 1.0
) -> Factors:
    """One memory's re-rank factors (its strength already decayed to now; `subject`, `temporal` given)."""
    importance = policy.importance_floor + (1 - policy.importance_floor) * (memory.importance - 1) / 4
    age_days = max(0.0, (now - memory.fresh_at).total_seconds() / 86_400)  # a verification counts
    recency = policy.recency_floor + (1 - policy.recency_floor) * math.exp(-policy.recency_lambda * age_days)
    strength = policy.strength_floor + (1 - policy.strength_floor) * min(
        max(memory.strength, 0.0) / policy.strength_scale, 1.0
    )
    consolidated = policy.consolidated_factor if memory.consolidated_into else 1.0
    return Factors(importance, recency, strength, subject, temporal, consolidated)


@dataclass(frozen=True, slots=True)
class AskedTime:
    """What a query says about time: the periods it names, and whether it asks when (or how long)."""

    periods: QuestionTimes
    asks_when: bool


NO_TIME = AskedTime((), asks_when=False)
"""What a query that says nothing about time says (or a policy with the temporal factor off)."""


def asked_time(query: str, reference: datetime) -> AskedTime:
    """The query's periods (relative words read against `reference`) and whether it asks when."""
    return AskedTime(question_times(query, reference), asks_for_time(query))


def temporal_factor(memory: Memory, asked: AskedTime, policy: RankingPolicy) -> float:
    """How well a memory fits the time a query is about (`ranking`'s module docstring), in [floor, 1].

    A query naming periods: 1 if one of the memory's periods (its event day, or a time its words
    state, read against its event time) falls in one of them, else `time_mismatch_factor`. A query
    asking when, naming none: 1 if the memory's words state a time, else `timeless_factor`.
    Otherwise 1.
    """
    if asked.periods:
        return 1.0 if matches(asked.periods, memory_periods(memory)) else policy.time_mismatch_factor
    if asked.asks_when:
        return 1.0 if states_time(memory.content) else policy.timeless_factor
    return 1.0
