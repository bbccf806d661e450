"""The offline summary is a consolidation (issue 34.7): salient, non-redundant statements within a budget.

Before, `memory_summarize` of 8 ingested turns stored all of them (~550 characters), which then
crowded search. These drive `MemoryService.summarize` on the in-memory doubles with the hashing
embedder, and `extractive_summary` directly.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import IngestMessage, IngestRequest
from rearview.service.memory_service import MemoryService
from rearview.service.write.summarize import (
    SUMMARY_FLOOR_CHARS,
    SUMMARY_SHARE,
    extractive_summary,
    summary_budget,
)
from rearview.shared.clock import ManualClock
from tests.factories import T0, make_memory

TURNS = [
    ("Ann", "Can we pick an editor setup for the new laptop?"),
    ("Bo", "Sure, what do you usually use?"),
    ("Ann", "I use vim keybindings everywhere, in every editor I touch."),
    ("Bo", "Then VS Code with the Vim extension is the easy choice."),
    ("Ann", "ok"),
    ("Bo", "I will also set the font size to 14 and turn on format on save."),
    ("Ann", "thanks!"),
    ("Bo", "Done: VS Code, the Vim extension, font 14, format on save."),
]


def test_a_summary_of_eight_turns_keeps_their_gist_not_the_transcript() -> None:
    clock = ManualClock(T0)
    service = MemoryService(InMemoryMemoryStore(clock), InMemoryMemoryIndex(256), HashingEmbedder(256), clock)
    messages = [
        IngestMessage(speaker=who, content=text, timestamp=T0 - timedelta(minutes=len(TURNS) - i))
        for i, (who, text) in enumerate(TURNS)
    ]
    service.ingest("t1", IngestRequest(messages=messages, session_id="editor"))
    summary = service.summarize("t1", session_id="editor").memory

    said = sum(len(text) for _, text in TURNS)
    header, _, body = summary.content.partition("): ")
    assert header.startswith("Summary of session editor")
    assert len(body) <= max(SUMMARY_FLOOR_CHARS, int(said * SUMMARY_SHARE)) + 1
    assert len(body) < said * 0.7, "a consolidation, not the whole conversation"
    assert "thanks" not in body and "; ok" not in body  # chit-chat left out
    assert len(summary.derived_from) >= len(TURNS)  # it still links every source


def test_a_long_session_keeps_at_most_half_of_what_was_said() -> None:
    texts = [
        f"Step {i}: we moved service{i} to the new cluster and checked its dashboards" for i in range(20)
    ]
    memories = [make_memory(content=t, event_time=T0 + timedelta(minutes=i)) for i, t in enumerate(texts)]
    vectors = np.asarray(HashingEmbedder(256).embed_documents(texts))
    body = extractive_summary(memories, vectors, "migration").partition("): ")[2]
    assert 0 < len(body) <= sum(map(len, texts)) * SUMMARY_SHARE + 1


def test_a_statement_said_twice_is_kept_once() -> None:
    texts = [
        "The deploy window is Tuesday at 14:00 UTC",
        "The deploy window is Tuesday at 14:00 UTC.",
        "Rollbacks need a second reviewer",
    ]
    memories = [make_memory(content=t, event_time=T0 + timedelta(minutes=i)) for i, t in enumerate(texts)]
    vectors = np.asarray(HashingEmbedder(256).embed_documents(texts))
    body = extractive_summary(memories, vectors, "ops").partition("): ")[2]
    assert body.count("deploy window") == 1 and "second reviewer" in body


def test_the_budget_is_a_share_of_the_sources_bounded_both_ways() -> None:
    short = [make_memory(content="x" * 50)]
    long = [make_memory(content="y" * 4000) for _ in range(10)]
    assert summary_budget(short) == SUMMARY_FLOOR_CHARS
    assert SUMMARY_FLOOR_CHARS < summary_budget(long) <= 40_000
