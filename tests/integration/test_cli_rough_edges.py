"""The rough edges a new user found on a fresh clone (issue 34.11), met as subprocesses.

`serve --port 0` named port 0, Ctrl-C on `serve` exited 0, a data directory that is a file was
`File exists`, `stats` accepted a config file that `serve` refused, and a JSON array of memories
was taken for a conversation.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_cli_first_use import ROOT, _one_line_error, _rearview


def _serve(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")},
        "PYTHONPATH": str(ROOT / "functions"),
        "PYTHONUNBUFFERED": "1",
        "REARVIEW_DATA_DIR": str(tmp_path / "data"),
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
    }
    code = "import sys\nfrom rearview.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.Popen(
        [sys.executable, "-c", code, "serve", *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_listener(port: int, server: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def test_serve_on_port_0_shows_the_port_it_got_and_ctrl_c_exits_130_after_a_clean_shutdown(
    tmp_path: Path,
) -> None:
    server = _serve(tmp_path, "--port", "0")
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", banner)
        assert match is not None, banner
        port = int(match.group(1))
        assert port != 0
        _wait_for_listener(port, server)
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 130, err
    assert "Traceback" not in err


def test_a_data_directory_that_is_a_file_is_named_with_its_flag(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a directory")
    for place in (a_file, a_file / "data"):
        result = _rearview(tmp_path, "--data-dir", str(place), "stats")
        assert result.returncode == 2
        line = _one_line_error(result)
        assert "`--data-dir`" in line and f"{place} is a file, not a directory" in line
    from_env = _rearview(tmp_path, "stats", REARVIEW_DATA_DIR=str(a_file))
    assert from_env.returncode == 2 and "REARVIEW_DATA_DIR" in _one_line_error(from_env)


@pytest.mark.parametrize(
    "config",
    [
        '[api_keys]\n"sk-a" = 5\n',  # an entry that maps to no tenant
        '[api_keys]\n"sk a" = "alice"\n',  # a key no HTTP header can carry
    ],
)
def test_stats_refuses_the_config_file_that_serve_refuses(tmp_path: Path, config: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "config.toml").write_text(config)
    lines = []
    for command in (("serve", "--port", "0"), ("stats",), ("export",)):
        result = _rearview(tmp_path, *command)
        assert result.returncode == 2, (command, result.stderr)
        lines.append(_one_line_error(result))
    assert len(set(lines)) == 1 and "api_keys" in lines[0]


def test_stats_refuses_an_oauth_issuer_that_serve_refuses(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "stats", REARVIEW_JWT_ISSUER="not-a-url")
    assert result.returncode == 2 and "REARVIEW_JWT_ISSUER" in _one_line_error(result)


def test_a_json_array_of_memories_imports(tmp_path: Path) -> None:
    memories = tmp_path / "memories.json"
    memories.write_text(
        json.dumps(
            [{"content": "The user likes green tea"}, {"content": "Deploys go out on Tuesdays"}], indent=2
        )
    )
    first = _rearview(tmp_path, "import", str(memories))
    assert first.returncode == 0, first.stderr
    assert "created 2" in first.stdout
    exported = _rearview(tmp_path, "export")
    records = tmp_path / "export.json"
    records.write_text(json.dumps([json.loads(line) for line in exported.stdout.splitlines()]))
    again = _rearview(tmp_path, "import", str(records))
    assert again.returncode == 0 and "already present 2" in again.stdout


def test_a_json_array_of_messages_is_a_conversation_and_a_broken_array_says_what_is_expected(
    tmp_path: Path,
) -> None:
    messages = tmp_path / "chat.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    result = _rearview(tmp_path, "import", str(messages))
    assert result.returncode == 2
    assert f"use `rearview ingest {messages}`" in _one_line_error(result)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"content": "a"}\n{"content": "b"}\n')
    result = _rearview(tmp_path, "import", str(broken))
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "not one JSON array" in line and "JSON Lines" in line
