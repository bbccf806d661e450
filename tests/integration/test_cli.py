"""The `rearview` CLI as a person at a terminal uses it (embedded backend, hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rearview.cli import main


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_EMBEDDER", "hashing")


def test_import_search_stats_reindex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    lines = [
        {"content": "The user prefers dark roast coffee", "tags": ["pref"]},
        {"content": "Deploys need a green CI run first", "type": "procedural", "importance": 4},
        {"content": "the user prefers dark roast coffee."},
        {"content": "", "type": "semantic"},
        {"content": "bad type", "type": "bogus"},
    ]
    src = tmp_path / "memories.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert main(["--data-dir", str(data), "import", str(src)]) == 1  # two lines skipped
    out, err = capsys.readouterr()
    assert "{'created': 2, 'merged': 1}; 2 skipped" in out
    assert "memories.jsonl:4: skipped: invalid `content`" in err and "memories.jsonl:5" in err

    assert main(["--data-dir", str(data), "search", "coffee roast"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0].startswith(" 1. [") and "dark roast coffee" in out.splitlines()[0]

    assert main(["--data-dir", str(data), "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["total"] == 2 and stats["by_type"] == {"procedural": 1, "semantic": 1}

    (data / "index-hashing_256.sqlite3").unlink()  # the index is derived: rebuild it from the store
    assert main(["--data-dir", str(data), "reindex"]) == 0
    assert "tenant 'local': 2 memories indexed" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "search", "green CI", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["type"] == "procedural"


def test_search_is_an_agents_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    src = tmp_path / "memories.jsonl"
    note = {
        "content": "Claude's private note on the flaky deploy",
        "agent_id": "claude-code",
        "visibility": "private",
    }
    src.write_text(json.dumps(note) + "\n")
    assert main(["--data-dir", str(data), "import", str(src)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(data), "search", "flaky deploy"]) == 0
    assert "(no matching memories)" in capsys.readouterr().out
    assert main(["--data-dir", str(data), "search", "flaky deploy", "--agent", "claude-code"]) == 0
    assert "private note on the flaky deploy" in capsys.readouterr().out


def test_serve_refuses_a_public_address_without_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve on 0.0.0.0 without API keys" in capsys.readouterr().err
