"""The Python snippet of docs/clients.md, run exactly as written: without a key (the quick start) and with one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server import running_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"


def _python_snippet() -> str:
    section = DOC.read_text(encoding="utf-8").split("## Python SDK", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found, "docs/clients.md has no Python snippet under '## Python SDK'"
    return found.group(1)


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
    return subprocess.run(
        [sys.executable, "-c", _python_snippet()],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_snippet_runs_against_the_quick_start_server_without_a_key(tmp_path: Path) -> None:
    with running_server(tmp_path / "data") as url:
        result = _run({"REARVIEW_URL": url})
    assert result.returncode == 0, result.stderr
    assert "memory_search" in result.stdout


@pytest.mark.parametrize(("key", "listed"), [("key-alice", True), ("wrong", False)])
def test_the_snippet_sends_the_key_when_one_is_set(tmp_path: Path, key: str, listed: bool) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[api_keys]\n"key-alice" = "alice"\n')
    with running_server(tmp_path / "data", config_file=config) as url:
        result = _run({"REARVIEW_URL": url, "REARVIEW_API_KEY": key})
    assert (result.returncode == 0) is listed, result.stderr
    assert ("memory_search" in result.stdout) is listed
