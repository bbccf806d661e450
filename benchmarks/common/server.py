"""`rearview serve` as a child process on a free loopback port, for the benchmarks that time it served."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER_START_S = 600.0  # a busy host; the ONNX graph is built before, by concurrent_search.load_memories


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(data_dir: Path, env: dict[str, str], log: Path) -> Iterator[tuple[str, int]]:
    """`rearview serve` on a free loopback port with `env` on top of ours: yields (MCP URL, pid)."""
    from benchmarks.common.synthetic_memories import TENANT  # numpy, on first use only

    port = free_port()
    environ = {
        **os.environ, "REARVIEW_DEFAULT_TENANT": TENANT, "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
        "REARVIEW_TENANT_REQUESTS_PER_SECOND": "0",  # one tenant on purpose, far faster than an agent
        "REARVIEW_TENANT_SEARCH_CONCURRENCY": str(len(os.sched_getaffinity(0))),  # the whole lane, as before
        **env,
    }  # fmt: skip
    cmd = [sys.executable, "-m", "rearview.cli", "--data-dir", str(data_dir), "serve", "--port", str(port)]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=environ, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
