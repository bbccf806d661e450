"""The MCP Inspector CLI (npm `@modelcontextprotocol/inspector`) against an API-key server.

With `--header "Authorization: Bearer <key>"` it lists the tools; without a key, or with a wrong
one, it stops at once with the server's own message (there is no metadata to start OAuth from).
Against a server with an OAuth issuer (`REARVIEW_JWT_ISSUER`), a bearer JWT of that issuer lists them.

Needs Node >= 20 (the package's `engines` says 22.19, but its CLI runs on 20: these tests ran on
20.20) and the Inspector: `REARVIEW_INSPECTOR` names an
installed `mcp-inspector`, else it is npm-installed once into ~/.cache/rearview (bounded by a
timeout). Without either, the tests skip and say why (`pytest -rs`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import running_server
from tests.oauth_issuer import local_issuer

pytestmark = pytest.mark.slow

INSPECTOR_VERSION = "2.12.0"
MIN_NODE = (20, 0)
INSTALL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 60
CACHE = Path.home() / ".cache" / "rearview" / f"inspector-{INSPECTOR_VERSION}"
KEY = "key-inspector"


def _node_version() -> tuple[int, int] | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False, timeout=10).stdout
    found = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(found[1]), int(found[2])) if found else None


def _installed_inspector() -> Path:
    """The `mcp-inspector` executable, installing it from npm if needed; skips when that cannot be done."""
    named = os.environ.get("REARVIEW_INSPECTOR")
    if named:
        return Path(named)
    binary = CACHE / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot fetch the MCP Inspector (or set REARVIEW_INSPECTOR)")
    CACHE.mkdir(parents=True, exist_ok=True)
    package = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
    try:
        result = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), package],
            capture_output=True,
            text=True,
            check=False,
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm install {package} took over {INSTALL_TIMEOUT_S} s (no registry access?)")
    if result.returncode != 0 or not binary.exists():
        pytest.skip(f"npm install {package} failed (no registry access?): {result.stderr.strip()[-300:]}")
    return binary


@pytest.fixture(scope="module")
def inspector() -> Path:
    version = _node_version()
    if version is None or version < MIN_NODE:
        found = "no node on PATH" if version is None else f"node v{version[0]}.{version[1]}"
        pytest.skip(f"the MCP Inspector CLI needs Node >= {MIN_NODE[0]}.{MIN_NODE[1]}; found {found}")
    return _installed_inspector()


@pytest.fixture(scope="module")
def keyed_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("inspector")
    config = root / "config.toml"
    config.write_text(f'[api_keys]\n"{KEY}" = "alice"\n')
    with running_server(root / "data", config_file=config) as url:
        yield url


def _run(
    inspector: Path, url: str, home: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Exit code and stdout+stderr of `mcp-inspector --cli <url> --method tools/list <extra>`."""
    result = subprocess.run(
        [str(inspector), "--cli", url, "--transport", "http", "--method", "tools/list", *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        # A fresh HOME: no stored OAuth state from the user's own runs, and nothing left behind.
        env={**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory", **(env or {})},
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("header", [f"Authorization: Bearer {KEY}", f"X-API-Key: {KEY}"])
def test_the_inspector_lists_the_tools_with_the_key_in_a_header(
    inspector: Path, keyed_url: str, tmp_path: Path, header: str
) -> None:
    code, out = _run(inspector, keyed_url, tmp_path, "--header", header)
    assert code == 0, out
    assert "memory_search" in {tool["name"] for tool in json.loads(out[out.index("{") :])["tools"]}


@pytest.mark.parametrize("header", [(), ("--header", "Authorization: Bearer wrong")], ids=["none", "wrong"])
def test_without_a_valid_key_the_inspector_stops_at_once_with_the_servers_message(
    inspector: Path, keyed_url: str, tmp_path: Path, header: tuple[str, ...]
) -> None:
    # As a person at a terminal runs it: the Inspector tries OAuth on any 401; with no metadata and no
    # authorization server here its first OAuth request (client registration) gets the server's 401
    # message, so it stops there, telling the user to send a key, instead of opening a browser.
    code, out = _run(
        inspector, keyed_url, tmp_path, *header, env={"MCP_AUTO_OPEN_ENABLED": "true", "BROWSER": "true"}
    )
    assert code != 0
    assert "Authorization: Bearer <API key or token>" in out, out


def test_in_ci_the_inspector_reports_auth_required(inspector: Path, keyed_url: str, tmp_path: Path) -> None:
    code, out = _run(inspector, keyed_url, tmp_path, "--stored-auth-only")
    assert code == 3, out  # the Inspector's exit code for auth_required
    assert '"auth_required"' in out


def test_the_inspector_lists_the_tools_with_a_jwt_of_the_servers_issuer(
    inspector: Path, tmp_path: Path
) -> None:
    with local_issuer() as issuer, running_server(tmp_path / "data", jwt_issuer=issuer.url) as url:
        header = f"Authorization: Bearer {issuer.token('alice')}"
        code, out = _run(inspector, url, tmp_path, "--header", header)
    assert code == 0, out
    assert "memory_search" in {tool["name"] for tool in json.loads(out[out.index("{") :])["tools"]}
