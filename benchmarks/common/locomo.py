"""The LoCoMo data set as the benchmarks read it, and a fresh embedded SQLite service to write it into.

Protocol: ../shared/data/locomo/README.md (the data set is CC BY-NC and is never copied into this
repository). `load_locomo` keeps each conversation's turns in order (`"<speaker>: <text>"`, plus
`" [shares image: <caption>]"`; event time = the session's date) and the questions of categories 1-4
whose evidence names known turns; `skipped` counts the rest by reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common.paths import SHARED_DATA
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.models import IngestMessage
from rearview.ports import Embedder
from rearview.service.memory_service import MemoryService, ServiceConfig

DEFAULT_DATASET = SHARED_DATA / "locomo" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"^D\d+:\d+$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn, as it will be stored."""

    dia_id: str
    session: int
    content: str
    event_time: datetime


@dataclass(frozen=True, slots=True)
class Question:
    """One retrieval question: its text, category and distinct evidence turns."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    """One LoCoMo sample: its turns in order and the questions asked about them."""

    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def turn_content(turn: dict[str, str]) -> str:
    """The memory text of a turn: speaker, text and the shared image's caption if any."""
    content = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [shares image: {turn['blip_caption']}]"
    return content


def load_locomo(path: Path, limit: int | None, skipped: Counter[str]) -> list[Conversation]:
    """Conversations with their turns and usable questions; `skipped` counts what was left out and why."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for sample in raw[:limit]:
        conv = Conversation(sample["sample_id"])
        dialogue = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in dialogue if (m := _SESSION_KEY.match(key)) is not None
        )
        for number, key in sessions:
            when = datetime.strptime(dialogue[f"{key}_date_time"], _DATE_FORMAT).replace(tzinfo=UTC)
            conv.turns.extend(Turn(t["dia_id"], number, turn_content(t), when) for t in dialogue[key])
        known = {t.dia_id for t in conv.turns}
        for qa in sample["qa"]:
            reason = _unusable(qa, known)
            if reason is not None:
                skipped[reason] += 1
                continue
            conv.questions.append(
                Question(qa["question"], int(qa["category"]), tuple(dict.fromkeys(qa["evidence"])))
            )
        conversations.append(conv)
    return conversations


def _unusable(qa: dict[str, object], known: set[str]) -> str | None:
    """Why a question cannot be scored (None if it can)."""
    evidence = qa.get("evidence")
    if qa.get("category") not in CATEGORIES:
        return "category 5 (adversarial)"
    if not isinstance(evidence, list) or not evidence:
        return "no evidence"
    if not all(isinstance(e, str) and _DIA_ID.match(e) for e in evidence):
        return "malformed evidence id"
    if not all(e in known for e in evidence):
        return "evidence id names no turn"
    return None


def ingest_messages(turns: Iterable[Turn]) -> list[IngestMessage]:
    """One session's turns as `memory_ingest` messages: speaker, text, the session's date, the dia_id."""
    messages = []
    for turn in turns:
        speaker, _, text = turn.content.partition(": ")
        messages.append(
            IngestMessage(speaker=speaker, content=text, timestamp=turn.event_time, message_id=turn.dia_id)
        )
    return messages


def sqlite_service(workdir: Path, embedder: Embedder, config: ServiceConfig) -> MemoryService:
    store = SQLiteMemoryStore(workdir / "store.sqlite3")
    index = SQLiteMemoryIndex(workdir / "index.sqlite3", embedder.dimension)
    store.ensure_schema()
    index.ensure_schema()
    return MemoryService(store, index, embedder, config=config)
