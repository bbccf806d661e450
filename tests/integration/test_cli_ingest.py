"""`rearview ingest FILE`: JSON Lines or a chat transcript in, a summary out, and nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rearview.backends.memory import InMemoryMemoryIndex, InMemoryMemoryStore
from rearview.cli import main
from rearview.cli.ingest_file import IngestRun, calls, read_conversation
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import LanguageModelError
from rearview.limits import MAX_INGEST_CHARS, MAX_INGEST_MESSAGES
from rearview.models import IngestMessage, Visibility
from rearview.service.ingest.llm_extraction import LanguageModelExtractor
from rearview.service.memory_service import MemoryService
from rearview.testing import ScriptedModel

ANTHROPIC = {
    "system": "You are helpful.",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "I prefer window seats."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Noted."},
                {"type": "tool_use", "id": "tu1", "name": "book", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "ok"}]},
    ],
}
OPENAI = {
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "name": "Li", "content": "我喜欢喝绿茶"},
        {"role": "assistant", "content": "好的"},
    ]
}


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_json_lines_chat_is_ingested_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, src = tmp_path / "data", tmp_path / "trip.jsonl"
    lines = [
        {"speaker": "Ann", "content": "My sister's name is Jo.", "message_id": "1", "timestamp": "2026-03-01T10:00:00Z"},
        {"speaker": "Bo", "content": "Nice to meet her!", "message_id": "2", "timestamp": "2026-03-01T10:01:00Z"},
    ]  # fmt: skip
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")

    assert main(["--data-dir", str(data), "ingest", str(src), "--agent", "planner"]) == 0
    out, err = capsys.readouterr()
    assert "ingested 2 messages into session 'trip' of tenant 'local' (rules)" in out
    assert "memories created 3; 1 fact extracted" in out
    assert "ingest" not in err and "\r" not in err  # stderr is not a terminal: no progress bar

    assert main(["--data-dir", str(data), "ingest", str(src), "--agent", "planner"]) == 0
    assert "memories replayed 3; 1 fact extracted" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "search", "sister name"]) == 0
    assert "Ann's sister's name is Jo" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("transcript", "speakers", "skipped"),
    [(ANTHROPIC, ["user", "assistant"], 1), (OPENAI, ["Li", "assistant"], 1)],
    ids=["anthropic", "openai"],
)
def test_transcripts_keep_the_conversation_and_skip_prompts_and_tool_blocks(
    tmp_path: Path, transcript: dict[str, object], speakers: list[str], skipped: int
) -> None:
    conversation = read_conversation(_write(tmp_path / "chat.json", transcript))
    assert [m.speaker or m.role for m in conversation.messages] == speakers
    assert conversation.skipped == skipped
    assert conversation.messages[1].content == ("Noted." if transcript is ANTHROPIC else "好的")


def test_a_transcript_ingests_with_the_session_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "chat.json", OPENAI)
    assert main(["--data-dir", str(tmp_path / "d"), "ingest", str(src), "--session-id", "s-42"]) == 0
    out = capsys.readouterr().out
    assert "ingested 2 messages into session 's-42'" in out and "1 fact extracted; 1 message skipped" in out


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"speaker": "A", "content": "ok"}\n{not json\n', "line 2"),
        ('{"messages": [{"role": "user", "content": "hi", "timestamp": "noon"}]}', "messages[0].timestamp"),
        ('[{"role": "user", "content": "hi"}, 7]', "messages[1]"),
    ],
)
def test_a_bad_file_is_a_usage_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, where: str
) -> None:
    src, data = tmp_path / "bad.json", tmp_path / "data"
    src.write_text(content)
    assert main(["--data-dir", str(data), "ingest", str(src)]) == 2
    assert f"rearview: error: invalid `{where}`" in capsys.readouterr().err
    assert main(["--data-dir", str(data), "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 0


def test_a_long_conversation_is_sent_in_calls_within_the_limits() -> None:
    many = [IngestMessage(role="user", content="x" * 900) for _ in range(3 * MAX_INGEST_MESSAGES)]
    runs = list(calls(many))
    assert sum(len(r) for r in runs) == len(many)
    assert all(
        len(r) <= MAX_INGEST_MESSAGES and sum(len(m.content) for m in r) <= MAX_INGEST_CHARS for r in runs
    )
    assert len(runs) == 6  # 111 messages of 900 characters fit 100,000


def test_the_summary_says_when_the_model_failed_and_the_messages_were_kept() -> None:

    model = ScriptedModel(LanguageModelError("Bedrock Converse failed (ThrottlingException): slow down"))
    service = MemoryService(
        InMemoryMemoryStore(),
        InMemoryMemoryIndex(64),
        HashingEmbedder(64),
        extractor=LanguageModelExtractor(model),
    )
    run = IngestRun(service, "t1", "s1", "default", Visibility.SHARED)
    run.send([IngestMessage(speaker="Ann", content="I prefer window seats.")])
    line = run.summary(skipped=0)
    assert "(fallback): memories created 1; 0 facts extracted" in line
    assert "1 call kept the messages only" in line and "ThrottlingException" in line


@pytest.mark.parametrize(
    "line",
    [
        {"content": "The user prefers dark mode", "tags": ["ui"]},
        {"content": "Deploys need a green CI run", "type": "procedural", "importance": 4},
        {"format": "rearview-export/1", "memory": {}, "history": []},
    ],
    ids=["write request", "typed write request", "export record"],
)
def test_ingesting_memories_points_to_import_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, object]
) -> None:
    src, data = tmp_path / "memories.jsonl", tmp_path / "data"
    src.write_text(json.dumps(line) + "\n" + json.dumps({"content": "second"}) + "\n")
    assert main(["--data-dir", str(data), "ingest", str(src)]) == 2
    err = capsys.readouterr().err
    assert "this is not a conversation" in err and "use `rearview import`" in err
    assert "speaker" not in err.split("has no")[0]  # not the confusing "speaker must not be empty"
    assert main(["--data-dir", str(data), "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 0
