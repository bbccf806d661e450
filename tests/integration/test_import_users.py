"""`import --from mem0` of an export holding several users: each user's memories stay theirs.

The fixture `mem0_export.json` was written by mem0 2.2.1 itself (`Memory.get_all()` of users
alice and bob, 10 memories each; also in shared/data/importers/): Bob's "My cat is called Mochi."
must never answer Alice's "what is my cat called?".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rearview.bootstrap import build_service
from rearview.cli import main
from rearview.config.settings import Settings
from rearview.importers.command import import_from
from rearview.importers.users import PerUser
from rearview.models import MemoryFilter, SearchRequest, Visibility

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
EXPORT = FIXTURES / "mem0_export.json"
MOCHI = "My cat is called Mochi."
CAT = "what is my cat called?"


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "REARVIEW_EMBEDDER": "hashing", "PATH": "/usr/bin:/bin", "HOME": str(data),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }  # fmt: skip
    command = [sys.executable, "-m", "rearview.cli", "--data-dir", str(data), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=300)


def _contents(search_json: str) -> list[str]:
    return [hit["content"] for hit in json.loads(search_json)["results"]]


def test_a_file_of_several_users_is_refused_naming_them_and_the_option(tmp_path: Path) -> None:
    refused = _cli(tmp_path, "import", "--from", "mem0", str(EXPORT))
    assert refused.returncode == 2 and refused.stdout == ""
    message = refused.stderr.strip()
    assert "\n" not in message and "2 users ('alice', 'bob')" in message
    assert "--per-user tenant" in message and "--per-user agent" in message
    assert json.loads(_cli(tmp_path, "stats").stdout)["total"] == 0  # nothing written


def test_per_user_tenant_keeps_each_users_memories_in_their_own_tenant(tmp_path: Path) -> None:
    done = _cli(tmp_path, "import", "--from", "mem0", "--per-user", "tenant", str(EXPORT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "mapped 20 into tenant 'alice' (agent 'default'): created 10; "
        "into tenant 'bob' (agent 'default'): created 10; skipped 0; refused 0"
    )
    alice = _cli(tmp_path, "search", CAT, "--tenant", "alice", "--json")
    bob = _cli(tmp_path, "search", CAT, "--tenant", "bob", "--json")
    assert MOCHI not in _contents(alice.stdout)
    assert _contents(bob.stdout)[0] == MOCHI


def test_per_user_agent_makes_each_users_memories_private_to_their_agent(tmp_path: Path) -> None:
    service = build_service(Settings.load(data_dir=tmp_path, embedder="hashing"))
    outcome = import_from(service, "mem0", EXPORT, "local", PerUser.AGENT)
    assert outcome.summary() == (
        "mapped 20 into tenant 'local' (agents 'alice', 'bob'): created 20; skipped 0; refused 0"
    )
    as_alice = service.search("local", SearchRequest(query=CAT, agent_id="alice"))
    as_bob = service.search("local", SearchRequest(query=CAT, agent_id="bob"))
    assert MOCHI not in [h.content for h in as_alice.results]
    assert as_bob.results[0].content == MOCHI
    page = service.store.list_memories("local", MemoryFilter(), limit=50)
    assert {(m.agent_id, m.visibility) for m in page.items} == {
        ("alice", Visibility.PRIVATE), ("bob", Visibility.PRIVATE),
    }  # fmt: skip


def test_mem0_created_at_is_the_memorys_creation_time_and_retention_counts_from_it(tmp_path: Path) -> None:
    export = tmp_path / "old.json"
    created = datetime.now(UTC) - timedelta(days=40)
    export.write_text(json.dumps([{"id": "m-1", "memory": "Likes tea", "created_at": created.isoformat()}]))
    service = build_service(Settings.load(data_dir=tmp_path / "data", embedder="hashing"))
    import_from(service, "mem0", export, "local")
    (memory,) = service.store.list_memories("local", MemoryFilter(), limit=5).items
    assert memory.created_at == created and memory.event_time == created
    assert memory.last_accessed_at == created  # decay counts from it
    assert memory.expires_at == created + timedelta(days=180)  # importance 3 keeps 180 days


def test_a_record_past_its_retention_from_created_at_is_skipped_saying_why(tmp_path: Path) -> None:
    export = tmp_path / "old.json"
    created = datetime.now(UTC) - timedelta(days=200)
    export.write_text(json.dumps([{"id": "m-1", "memory": "Likes tea", "created_at": created.isoformat()}]))
    service = build_service(Settings.load(data_dir=tmp_path / "data", embedder="hashing"))
    (report,) = import_from(service, "mem0", export, "local").reports
    assert report.counts == {} and [s.source_id for s in report.skipped] == ["mem0:m-1"]
    assert (
        f"past its retention: created {created.date().isoformat()}, kept 180 days" in report.skipped[0].reason
    )
    assert "REARVIEW_RETENTION_DAYS" in report.skipped[0].reason


def test_a_single_user_file_imports_as_before_without_the_option(tmp_path: Path) -> None:
    keep = dict.fromkeys(range(1, 6), "forever")  # the fixture is older than the default retention
    service = build_service(Settings.load(data_dir=tmp_path, embedder="hashing", retention_days=keep))
    outcome = import_from(service, "mem0", FIXTURES / "mem0.json", "local")
    assert outcome.reports[0].counts == {"created": 3, "merged": 1}


def test_a_created_at_in_the_future_is_refused_naming_the_field(tmp_path: Path) -> None:
    export = tmp_path / "future.json"
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    export.write_text(json.dumps([{"id": "m-1", "memory": "Likes tea", "created_at": later}]))
    service = build_service(Settings.load(data_dir=tmp_path / "data", embedder="hashing"))
    (refused,) = import_from(service, "mem0", export, "local").reports[0].refused
    assert refused.reason.startswith("invalid `created_at`: is in the future")


def test_per_user_without_from_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text('{"content": "Likes tea"}\n')
    assert main(["--data-dir", str(tmp_path), "import", "--per-user", "tenant", str(src)]) == 2
    assert "invalid `--per-user`" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["import", "ingest"])
def test_a_mem0_export_without_from_names_the_option(tmp_path: Path, command: str) -> None:
    done = _cli(tmp_path, command, str(EXPORT))
    assert done.returncode == 2
    assert (
        "this is a mem0 export" in done.stderr
        and f"use `rearview import --from mem0 {EXPORT}`" in done.stderr
    )


def test_a_mem0_json_lines_export_without_from_names_the_option(tmp_path: Path) -> None:
    lines = tmp_path / "mem0.jsonl"
    records = json.loads(EXPORT.read_text())["results"][:2]
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    for command in ("import", "ingest"):
        done = _cli(tmp_path, command, str(lines))
        assert done.returncode == 2 and "--from mem0" in done.stderr, done.stderr


def test_ingest_of_a_file_without_a_message_is_an_error_not_a_silent_success(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"notes": ["buy milk"]}))
    done = _cli(tmp_path, "ingest", str(odd))
    assert done.returncode == 2 and "has no message to ingest" in done.stderr


def test_import_from_shows_progress_per_record_on_a_terminal(tmp_path: Path) -> None:
    """On an interactive stderr (a pseudo-terminal here) the bar counts records: `20/20`."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a bar needs a width
    env = {
        "REARVIEW_EMBEDDER": "hashing", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }  # fmt: skip
    command = [sys.executable, "-m", "rearview.cli", "--data-dir", str(tmp_path), "import", "--from", "mem0"]
    proc = subprocess.Popen(
        [*command, "--per-user", "agent", str(EXPORT)], stdout=subprocess.PIPE, stderr=follower, env=env
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=300) == 0
    os.close(leader)
    assert b"import" in seen and b"20/20" in seen and b"record" in seen
