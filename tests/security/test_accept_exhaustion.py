"""Out of file descriptors, the server warns once and pauses accepting; it never floods its log (issue 45).

Before, at `RLIMIT_NOFILE` 1024, asyncio logged a traceback for every failed `accept()` (42,000 in
30 s): its accept loop went on calling `accept()` up to the backlog's length after the first
`EMFILE`, each failure logged and each scheduling another retry. Here a real uvicorn server with
`rearview serve`'s options runs in a child process whose descriptor limit is 64, and this process
opens more connections than that; the child's stderr is counted, and once the connections are
closed the server must serve again.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_NOFILE and EMFILE as on Linux")

SERVER = """
import resource, sys
import uvicorn
from rearview.api.http_limits import Limits, server_options

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})

resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
options = server_options(Limits(head_s=60.0, per_address=0))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", **options)
"""


def _serving(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def test_running_out_of_descriptors_logs_one_warning_and_recovers(tmp_path: Path) -> None:
    port = free_port()
    functions = str(Path(__file__).resolve().parents[2] / "functions")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([functions, os.environ.get("PYTHONPATH", "")])}
    stderr = (tmp_path / "stderr").open("w+")
    child = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], env=env, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while not _serving(port):
            assert child.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        with ExitStack() as stack:
            for _ in range(120):  # more than the child's 64 descriptors: its accept() fails
                stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
            time.sleep(2.0)
        deadline = time.monotonic() + 30
        while not _serving(port):  # the clients closed: descriptors free, the server accepts again
            assert child.poll() is None and time.monotonic() < deadline, "the server did not recover"
            time.sleep(0.2)
    finally:
        child.terminate()
        child.wait(timeout=30)
    stderr.seek(0)
    log = stderr.read()
    assert "Traceback" not in log, log[:2000]
    warnings = [line for line in log.splitlines() if "out of file descriptors" in line]
    assert len(warnings) == 1, log[:2000]
    assert "ulimit -n" in warnings[0]
