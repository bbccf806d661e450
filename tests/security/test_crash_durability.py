"""`kill -9` during a burst of writes: every acknowledged write survives, in the store and in the index.

`rearview serve` runs as a real process (embedded SQLite store and index, hashing embedder, its own
data dir). Concurrent clients write and update for about two seconds; the process is killed without
warning mid-burst; a fresh process on the same data dir must then return every acknowledged memory
at its acknowledged version or a newer one (an update in flight at the kill may have committed
unanswered; memory_get), and search must find it with the stored content and version (the index
holds what the store holds).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import free_port
from tests.mcp_client import call, connect

MODE = "2026-07-28"
BURST_S = 2.0
MAX_BURST_S = 20.0  # a loaded machine may need longer to acknowledge a few writes per writer
WRITERS = 4
SERVE = "import sys; from rearview.cli import main; sys.exit(main(sys.argv[1:]))"
Acked = dict[str, tuple[int, str]]  # memory id -> (version, content) of its last acknowledged write


@contextmanager
def rearview_serve(data_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`rearview serve` on a free loopback port; yields its MCP URL and the process."""
    port = free_port()
    env = {
        **os.environ,
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",  # no background rounds: only the burst touches the store
        "PYTHONPATH": os.pathsep.join(["functions", ".", os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-c", SERVE, "--data-dir", str(data_dir), "serve", "--port", str(port)]
    # A file, not a pipe: the server logs a line per request, and an undrained pipe would block it.
    log = data_dir.parent / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process, log)
        yield f"{base}/mcp", process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)


def wait_healthy(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = log.read_text(errors="replace")
            raise RuntimeError(f"rearview serve exited with {process.returncode}: {stderr[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("rearview serve did not become healthy")


def random_words() -> str:
    """Four random 8-hex-digit words: no two probes look alike, so none merges into another."""
    return " ".join(uuid.uuid4().hex[:8] for _ in range(4))


async def writer(url: str, acked: Acked, stop: asyncio.Event) -> None:
    """Write distinct memories (updating every third one) until stopped or the server dies."""
    try:
        async with connect(url, MODE) as client:
            n = 0
            while not stop.is_set():
                n += 1
                words = random_words()
                receipt = await call(client, "memory_write", {"content": f"Crash probe {words}"})
                written = await call(client, "memory_get", {"memory_id": receipt["id"]})
                acked[written["id"]] = (written["version"], written["content"])
                if n % 3 == 0:
                    args = {"memory_id": written["id"], "content": f"Crash probe updated {words}"}
                    updated = await call(client, "memory_update", args)
                    acked[updated["id"]] = (updated["version"], updated["content"])
    except (Exception, BaseExceptionGroup):  # the kill cuts every session mid-call; the acked are recorded
        return


async def burst_then_kill(url: str, process: subprocess.Popen[bytes]) -> Acked:
    acked: Acked = {}
    async with connect(url, MODE) as client:  # warm up (tokenizer, first SQLite pages) before the clock runs
        receipt = await call(client, "memory_write", {"content": f"Crash probe warm-up {random_words()}"})
        warm = await call(client, "memory_get", {"memory_id": receipt["id"]})
        acked[warm["id"]] = (warm["version"], warm["content"])
    stop = asyncio.Event()
    tasks = [asyncio.create_task(writer(url, acked, stop)) for _ in range(WRITERS)]
    started = time.monotonic()
    while time.monotonic() - started < MAX_BURST_S and (
        time.monotonic() - started < BURST_S or len(acked) < 2 * WRITERS
    ):
        await asyncio.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # mid-burst, no shutdown of any kind
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    return dict(acked)


async def assert_all_present(url: str, acked: Acked) -> None:
    async with connect(url, MODE) as client:
        for memory_id, (version, acked_content) in acked.items():
            stored = await call(client, "memory_get", {"memory_id": memory_id})
            assert stored["status"] == "active"
            # An update in flight at the kill may have committed without its answer arriving: then
            # the store holds that newer version (its own content), never an older one.
            assert stored["version"] >= version, (memory_id, stored["version"], version)
            if stored["version"] == version:
                assert stored["content"] == acked_content
            content = stored["content"]
            # Only the memory's own random words: recalls reinforce, so a shared prefix would let
            # earlier-recalled memories outrank it.
            query = " ".join(content.split()[-4:])
            hits = (await call(client, "memory_search", {"query": query, "top_k": 3}))["results"]
            hit = next((h for h in hits if h["id"] == memory_id), None)
            assert hit is not None, f"{memory_id} (v{version}) is in the store but not found by search"
            assert hit["content"] == content  # the index holds the stored version, not an older one


@pytest.mark.slow
async def test_every_acknowledged_write_survives_kill_9(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with rearview_serve(data_dir) as (url, process):
        acked = await burst_then_kill(url, process)
        assert process.wait(timeout=10) == -signal.SIGKILL
    assert len(acked) >= 2 * WRITERS, "the burst acknowledged too few writes to prove anything"
    print(f"{len(acked)} acknowledged memories, {sum(v > 1 for v, _ in acked.values())} of them updated")
    with rearview_serve(data_dir) as (url, _):
        await assert_all_present(url, acked)
