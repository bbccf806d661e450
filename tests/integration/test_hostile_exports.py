"""`rearview import --from` on exports that are broken, hostile or huge: a clear error, never a traceback.

Deep nesting and bytes that are not UTF-8 (or a zip where JSON was expected) are an
`InvalidInputError` naming the file; a MemPalace folder's link to a file outside it is not read;
the Graphiti reader and the runner's ordering do work linear in the file (counted, not timed);
a far-future mem0 expiry keeps the record, its expiry clamped to the longest a memory may have.
"""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rearview.bootstrap import build_service
from rearview.cli import main
from rearview.config.settings import Settings
from rearview.errors import InvalidInputError
from rearview.importers import ImportRunner, graphiti, mem0, read_source
from rearview.importers.records import Candidate, Skipped
from rearview.limits import MAX_TTL_DAYS
from rearview.models import MemoryFilter
from rearview.service.memory_service import MemoryService

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
SOURCES = ("mem0", "openmemory", "graphiti", "letta", "mempalace")


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    return build_service(Settings.load(data_dir=tmp_path / "data", embedder="hashing"))


@pytest.mark.parametrize("source", ("mem0", "openmemory", "graphiti", "letta"))
@pytest.mark.parametrize("shape", ["json", "jsonl"])
def test_deep_nesting_is_a_clear_error_naming_the_file(source: str, shape: str, tmp_path: Path) -> None:
    export = tmp_path / "deep.json"
    deep = "[" * 100_000 + "]" * 100_000
    export.write_text('{"results": ' + deep + "}" if shape == "json" else '{"id": "a"}\n' + deep + "\n")
    with pytest.raises(InvalidInputError) as refused:
        list(read_source(source, export))
    assert refused.value.field == str(export) and "nested" in str(refused.value)


@pytest.mark.parametrize("source", SOURCES)
def test_bytes_that_are_not_utf8_are_a_clear_error_naming_the_file(source: str, tmp_path: Path) -> None:
    export = tmp_path / ("room.md" if source == "mempalace" else "latin1.json")
    export.write_bytes('{"results": [{"memory": "Café au lait"}]}\n'.encode("latin-1"))
    with pytest.raises(InvalidInputError) as refused:
        list(read_source(source, export))
    assert refused.value.field == str(export) and "UTF-8" in str(refused.value)


def test_an_openmemory_zip_is_a_clear_error_saying_to_unzip_it(tmp_path: Path) -> None:
    export = tmp_path / "memories_export.zip"
    with zipfile.ZipFile(export, "w") as archive:
        archive.writestr("memories.json", (FIXTURES / "openmemory.json").read_text())
    with pytest.raises(InvalidInputError) as refused:
        list(read_source("openmemory", export))
    assert refused.value.field == str(export) and "zip" in str(refused.value)


def test_the_cli_prints_one_line_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = tmp_path / "deep.json"
    export.write_text("[" * 100_000 + "]" * 100_000)
    code = main(["--data-dir", str(tmp_path / "data"), "import", "--from", "mem0", str(export)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and str(export) in err and "nested" in err


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("deep.jsonl", '{"content": ' + "[" * 100_000 + "]" * 100_000 + "}\n"),
        ("deep.json", "[" + "[" * 100_000 + "]" * 100_000 + "]"),
    ],
)
def test_a_plain_import_of_deep_nesting_is_a_line_not_a_traceback(
    name: str, body: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / name
    export.write_text(body)
    code = main(["--data-dir", str(tmp_path / "data"), "import", str(export)])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "nested too deep" in err


@pytest.mark.parametrize(
    ("name", "body", "said"),
    [
        ("latin1.json", b"\xff\xfe not UTF-8", "is not UTF-8"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        ("deep.jsonl", b'{"role": "user", "content": ' + b"[" * 100_000 + b"}\n{}\n", "nested too deep"),
    ],
)
def test_ingest_of_a_broken_file_is_a_line_naming_it_not_a_traceback(
    name: str, body: bytes, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rearview ingest` reads its file as the importers do (the review found both tracebacks)."""
    conversation = tmp_path / name
    conversation.write_bytes(body)
    code = main(["--data-dir", str(tmp_path / "data"), "ingest", str(conversation)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(conversation) in err and said in err


def test_mempalace_does_not_follow_a_link_out_of_the_folder(service: MemoryService, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.md"
    outside.parent.mkdir()
    outside.write_text("## d-outside\n\n> The root password is hunter2\n")
    palace = tmp_path / "palace"
    (palace / "wing_code").mkdir(parents=True)
    (palace / "wing_code" / "decisions.md").write_text("## d-inside\n\n> We chose Postgres\n")
    (palace / "wing_code" / "stolen.md").symlink_to(outside)
    (palace / "wing_linked").symlink_to(outside.parent, target_is_directory=True)
    records = list(read_source("mempalace", palace))
    assert [r.source_id for r in records if isinstance(r, Candidate)] == ["mempalace:d-inside"]
    skipped = [r for r in records if isinstance(r, Skipped)]  # (a linked folder: not walked, or skipped)
    assert "mempalace:wing_code/stolen.md" in {r.source_id for r in skipped}
    assert all("outside the export folder" in r.reason for r in skipped)
    ImportRunner(service, "local").run(records)
    stored = service.store.list_memories("local", MemoryFilter(), limit=10).items
    assert [m.content for m in stored] == ["We chose Postgres"]


def _edges(n: int) -> list[dict[str, Any]]:
    """`n` facts that ended and `n` current ones, all of one relation of one node (the worst case)."""
    old = [
        {"uuid": f"old-{i}", "fact": f"Alice worked at company {i}", "name": "WORKS_AT",
         "source_node_uuid": "alice", "valid_at": "2020-01-01T00:00:00Z", "invalid_at": "2025-01-01T00:00:00Z"}
        for i in range(n)
    ]  # fmt: skip
    new = [
        {"uuid": f"new-{i}", "fact": f"Alice works at company {n + i}", "name": "WORKS_AT",
         "source_node_uuid": "alice", "valid_at": "2019-01-01T00:00:00Z" if i < n - 1 else "2025-01-01T00:00:00Z"}
        for i in range(n)
    ]  # fmt: skip
    return old + new


def test_the_graphiti_reader_reads_each_time_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 2000
    export = tmp_path / "edges.json"
    export.write_text(json.dumps({"edges": _edges(n)}))
    calls = 0
    real = graphiti.lenient_time

    def counted(value: object, field_name: str) -> datetime | None:
        nonlocal calls
        calls += 1
        return real(value, field_name)

    monkeypatch.setattr(graphiti, "lenient_time", counted)
    records = list(read_source("graphiti", export))
    assert calls <= 20 * n  # a fixed number per edge; it was one per pair of edges (n * n)
    replacing = [r for r in records if isinstance(r, Candidate) and r.replaces]
    assert len(replacing) == n  # every old fact is kept, superseded in a line ending at new-(n-1)
    assert sum(1 for r in records if isinstance(r, Candidate) and r.source_id == "graphiti:new-1999") == 1


def test_the_runner_orders_a_long_line_of_replacements_in_linear_work(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 3000
    line = [Candidate(f"x:{i}", {"content": f"fact {i}"}, f"x:{i - 1}" if i else None) for i in range(n)]
    line.reverse()  # each waits for the one after it in the file
    compared = 0
    real_eq = Candidate.__eq__

    def counted_eq(self: Candidate, other: object) -> bool:
        nonlocal compared
        compared += 1
        return real_eq(self, other)

    applied: list[str] = []
    runner = ImportRunner(service, "local")
    monkeypatch.setattr(Candidate, "__eq__", counted_eq)
    monkeypatch.setattr(
        runner,
        "_apply",
        lambda c: (applied.append(c.source_id), runner._memory_of.update({c.source_id: "m"})),
    )
    runner.run(line)
    assert applied == [f"x:{i}" for i in range(n)]
    assert compared <= 10 * n


def test_a_far_future_mem0_expiry_keeps_the_record(service: MemoryService, tmp_path: Path) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps({"results": [
        {"id": "far", "memory": "Keeps the archive forever", "expiration_date": "9999-12-31"},
    ]}))  # fmt: skip
    [record] = list(mem0.read(export, now=datetime(2026, 1, 1, tzinfo=UTC)))
    assert isinstance(record, Candidate) and record.fields["ttl_days"] == MAX_TTL_DAYS
    report = ImportRunner(service, "local").run([record])
    assert report.counts == {"created": 1} and not report.refused
