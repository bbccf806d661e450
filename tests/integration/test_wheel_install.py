"""The wheel users install without a clone: built from this tree, installed with `[local]` into a clean venv.

What the README's `pipx install` / `uvx` line does, minus pipx: a fresh virtual environment gets
the wheel and the `local` extra from the package index (nothing from this checkout, no test
toolchain), then its `rearview serve` answers the official MCP client and serves the browser.
Needs the package index (pip's cache makes repeat runs quick).
"""

from __future__ import annotations

import os
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
DEV_ONLY = ("pytest", "moto", "mypy", "playwright", "cfn_lint", "boto3", "hypothesis", "ruff")
"""Import names of the test toolchain and the AWS SDK: none belongs in a `[local]` install."""


def _run(*argv: str | Path, timeout: float = 600) -> str:
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{' '.join(map(str, argv))}\n{result.stderr[-2000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` directory of a clean venv holding the built wheel with `[local]`."""
    root = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", root / "dist", ROOT)
    (wheel,) = (root / "dist").glob("rearview-*-py3-none-any.whl")
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    _run(
        bin_dir / "python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        f"{wheel}[local]",
    )
    return bin_dir


def test_the_wheel_holds_only_what_serving_needs(installed: Path) -> None:
    probe = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m)))"
    assert _run(installed / "python", "-c", probe, *DEV_ONLY).split() == []
    assert _run(installed / "rearview", "--version").strip().startswith("rearview ")


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")}
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
