"""The command line's smaller rough edges of issue 46.8-9, met as subprocesses.

`rearview --bogus` said a COMMAND is required, a bare `rearview` was a usage error, a misspelt
`REARVIEW_*` variable changed nothing silently, and the serve banner never reached a pipe or a log
file (pipx runs `python -E`, which ignores PYTHONUNBUFFERED).
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
from pathlib import Path

from tests.integration.test_cli_first_use import ROOT, _one_line_error, _rearview


def test_an_unknown_option_is_named_before_the_missing_command(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "--bogus")
    assert result.returncode == 2
    assert "unrecognized arguments: --bogus" in _one_line_error(result)


def test_a_bare_rearview_prints_the_help_and_succeeds(tmp_path: Path) -> None:
    result = _rearview(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "usage: rearview" in result.stdout and "serve" in result.stdout and not result.stderr


def test_options_without_a_command_name_the_commands(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    line = _one_line_error(result)
    assert "a COMMAND is required" in line and "serve" in line and "import" in line


def test_a_misspelt_variable_is_named_with_the_setting_it_was_meant_for(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "stats", REARVIEW_EMBEDER="hashing", REARVIEW_SKIP_DEPLOYED="1")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "rearview: warning: REARVIEW_EMBEDER is not a Rearview setting and is ignored;"
        " did you mean REARVIEW_EMBEDDER?"
    ]  # a variable of the test tooling, close to no setting, is not warned about


def test_the_serve_banner_reaches_a_pipe_while_the_server_runs(tmp_path: Path) -> None:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_") and k != "PYTHONUNBUFFERED"},
        "PYTHONPATH": str(ROOT / "functions"),
        "REARVIEW_DATA_DIR": str(tmp_path / "data"),
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
    }
    code = "import sys\nfrom rearview.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    server = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", "0"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready, "no banner within 60 s while the server runs"
        banner = os.read(server.stdout.fileno(), 4096).decode()
        assert re.search(r"Rearview MCP at http://127\.0\.0\.1:\d+/mcp", banner), banner
    finally:
        server.kill()
        server.wait(timeout=30)
