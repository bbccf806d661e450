"""Import trusts nothing in the file: `rearview import` of hand-made export records and hostile lines.

An export line is restored around the write path (same id, versions and history), so it must pass
the limits a write is held to and carry only its own history; a bad record writes nothing and is
one line on stderr, never a traceback; a restore cut short is finished by running it again; the
file is streamed, not held whole; what the CLI prints from the file is escaped.
"""

from __future__ import annotations

import copy
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from rearview.backends.memory import InMemoryMemoryIndex
from rearview.bootstrap import build_service
from rearview.cli import main
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import UpdateRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.service.portability import Restorer, export_tenant
from rearview.shared.clock import ManualClock
from rearview.testing import Fault, FlakyMemoryStore, InjectedError
from tests.factories import T0


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")
    monkeypatch.setenv("REARVIEW_LIFECYCLE_INTERVAL_S", "0")


@pytest.fixture
def exported(tmp_path: Path) -> list[dict[str, Any]]:
    """A real export of tenant `alice`: a memory with two history events, and another with one."""
    service = build_service(Settings.load(data_dir=tmp_path / "source"))
    first = service.write("alice", WriteRequest(content="The build needs Python 3.11", tags=["ci"]))
    service.update("alice", UpdateRequest(memory_id=first.memory.id, importance=5))
    service.write("alice", WriteRequest(content="Reviews happen on Tuesdays"))
    service.write("bob", WriteRequest(content="Bob's deploy window is Friday"))
    return [
        json.loads(r.model_dump_json()) for t in ("alice", "bob") for r in export_tenant(service.store, t)
    ]


def _import(tmp_path: Path, records: list[dict[str, Any]], *flags: str) -> tuple[int, str, str, Path]:
    src = tmp_path / "hostile.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    data = tmp_path / "target"
    code = main(["--data-dir", str(data), "import", *flags, str(src)])
    return code, *_read(), data


_captured: list[pytest.CaptureFixture[str]] = []


@pytest.fixture(autouse=True)
def _capture(capsys: pytest.CaptureFixture[str]) -> None:
    _captured[:] = [capsys]


def _read() -> tuple[str, str]:
    out, err = _captured[0].readouterr()
    return out, err


def _total(data: Path) -> int:
    return sum(
        build_service(Settings.load(data_dir=data)).stats(t).total for t in ("alice", "bob", "mallory")
    )


def _with(record: dict[str, Any], **memory: Any) -> dict[str, Any]:
    forged = copy.deepcopy(record)
    forged["memory"].update(memory)
    return forged


HUGE = "x" * 10_000_000


@pytest.mark.parametrize(
    ("forge", "field"),
    [
        (lambda r: _with(r, content=HUGE), "memory.content"),
        (lambda r: _with(r, id="m" * 5000), "memory.id"),
        (lambda r: _with(r, content="deploy \x00 now\x1b]0;pwned\x07"), "memory.content"),
        (lambda r: _with(r, tags=[f"t{i}" for i in range(5000)]), "memory.tags"),
        (lambda r: _with(r, agent_id="a" * 5000), "memory.agent_id"),
        (lambda r: _with(r, metadata={f"k{i}": "v" for i in range(500)}), "memory.metadata"),
        (lambda r: _with(r, importance=99), "memory.importance"),
        (
            lambda r: _with(r, idempotency_key="5:alice:their-key", agent_id="mallory"),
            "memory.idempotency_key",
        ),
    ],
    ids=[
        "10 MB content",
        "5000-char id",
        "NUL ESC BEL",
        "5000 tags",
        "5000-char agent",
        "500 keys",
        "importance 99",
        "another agent's key",
    ],
)
def test_a_record_beyond_a_writes_limits_is_refused_and_nothing_is_written(
    tmp_path: Path, exported: list[dict[str, Any]], forge: Any, field: str
) -> None:
    records = [*exported[:1], forge(exported[1])]
    for flags in ((), ("--continue-on-error",)):
        code, _, err, data = _import(tmp_path, records, *flags)
        assert code == 1 and "Traceback" not in err
        assert f"hostile.jsonl:2: skipped: invalid `{field}`" in err, err
        assert "\x1b" not in err and "\x00" not in err and len(err) < 2000
        assert _total(data) == (1 if flags else 0)  # the default imports nothing at all


def _updated(exported: list[dict[str, Any]]) -> dict[str, Any]:
    """The record whose memory was created, then updated: two history events."""
    return next(r for r in exported if len(r["history"]) == 2)


def test_history_that_names_another_memory_is_refused(tmp_path: Path, exported: list[dict[str, Any]]) -> None:
    victim = exported[-1]  # bob's memory
    forged = copy.deepcopy(_updated(exported))
    forged["history"].append(
        {
            **forged["history"][-1],
            "id": "01FORGED",
            "tenant_id": "bob",
            "memory_id": victim["memory"]["id"],
            "note": "bob agreed",
        }
    )
    code, _, err, data = _import(tmp_path, [victim, forged], "--continue-on-error")
    assert code == 1 and "hostile.jsonl:2: skipped: invalid `history[2]`: belongs to memory" in err
    bob = build_service(Settings.load(data_dir=data))
    assert [e.id for e in bob.store.history("bob", victim["memory"]["id"])] == [victim["history"][0]["id"]]


def test_duplicate_event_ids_are_refused_before_anything_is_written(
    tmp_path: Path, exported: list[dict[str, Any]]
) -> None:
    forged = copy.deepcopy(_updated(exported))
    forged["history"][1]["id"] = forged["history"][0]["id"]
    code, _, err, data = _import(tmp_path, [forged], "--continue-on-error")
    assert code == 1 and "Traceback" not in err and "IntegrityError" not in err
    assert "invalid `history[1].id`: event" in err and "appears twice" in err
    assert _total(data) == 0  # was: the memory and its first event, then a traceback


def test_a_restore_cut_short_is_finished_by_running_it_again(exported: list[dict[str, Any]]) -> None:
    from rearview.service.portability import ExportRecord

    record = ExportRecord.model_validate(_updated(exported))
    assert len(record.history) == 2
    clock = ManualClock(T0)
    store = FlakyMemoryStore(Fault(on_call=2), clock)  # the second commit (the second event) crashes
    service = MemoryService(store, InMemoryMemoryIndex(256), HashingEmbedder(256), clock)
    with pytest.raises(InjectedError):
        Restorer(service).restore(record)
    assert len(store.history("alice", record.memory.id)) == 1  # cut short
    Restorer(service).restore(record)  # was: "already exists", and the history stayed half
    assert store.history("alice", record.memory.id) == record.history
    assert Restorer(service).restore(record).present  # whole now: a third run writes nothing
    assert store.history("alice", record.memory.id) == record.history


def test_the_summary_names_each_tenant_written_with_its_counts(
    tmp_path: Path, exported: list[dict[str, Any]]
) -> None:
    code, out, _, _ = _import(tmp_path, exported)
    assert code == 0
    assert out == "imported into tenant 'alice': restored 2; tenant 'bob': restored 1\n"


def test_invalid_utf8_is_that_lines_problem_not_a_traceback(
    tmp_path: Path, exported: list[dict[str, Any]]
) -> None:
    src = tmp_path / "hostile.jsonl"
    src.write_bytes(json.dumps(exported[0]).encode() + b"\n" + b'{"content": "\xff\xfe"}\n')
    assert main(["--data-dir", str(tmp_path / "target"), "import", str(src)]) == 1
    _, err = _read()
    assert "hostile.jsonl:2: skipped: not UTF-8 (byte 0xff at offset 13)" in err and "Traceback" not in err
    assert _total(tmp_path / "target") == 0


def test_what_the_cli_prints_from_the_file_is_escaped(tmp_path: Path) -> None:
    src = tmp_path / "hostile.jsonl"
    src.write_text(json.dumps({"content": "fine", "\x1b]0;owned\x07\x1b[2J": 1}) + "\n")
    assert main(["--data-dir", str(tmp_path / "target"), "import", str(src)]) == 1
    _, err = _read()
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;owned\\x07" in err


def test_the_file_is_streamed_not_held_whole(tmp_path: Path) -> None:
    """40 MB of lines, the last one bad: the check reads every line and keeps none of them."""
    src = tmp_path / "big.jsonl"
    line = json.dumps({"content": "note " + "y" * 1300, "tags": ["bulk"]}) + "\n"
    with src.open("w") as fh:
        fh.writelines(line for _ in range(30_000))
        fh.write("{not json\n")
    tracemalloc.start()
    try:
        assert main(["--data-dir", str(tmp_path / "target"), "import", str(src)]) == 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "big.jsonl:30001: skipped: not JSON" in _read()[1]
    assert peak < 10_000_000, (
        f"peak {peak / 1e6:.0f} MB while checking a {src.stat().st_size / 1e6:.0f} MB file"
    )
