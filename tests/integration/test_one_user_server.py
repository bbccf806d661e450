"""A keyless server does not ration its only user; a keyed one's refusals are waited out (issue 46.4).

Fair share protects tenants from each other. A keyless `rearview serve` has one tenant, and a
60-request burst from it (our own benchmarks' bulk writers) got 429 `too_many_connections` past
32 connections and 429s past the tenant rate's burst. With keys the rate stays, and the Python
client waits out its `Retry-After` instead of failing. Real `rearview serve` subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from rearview import Memory
from rearview.client.retry_after import ATTEMPTS, RetryAfterTransport, retry_after_of
from rearview.config.settings import Settings
from tests.e2e.server import free_port
from tests.integration.test_cli_first_use import ROOT

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
).encode()


@contextmanager
def _serving(data: Path, **env: str) -> Iterator[str]:
    port = free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REARVIEW_")},
        "PYTHONPATH": str(ROOT / "functions"),
        "REARVIEW_DATA_DIR": str(data),
        "REARVIEW_EMBEDDER": "hashing",
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
        **env,
    }
    code = "import sys\nfrom rearview.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    server = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", str(port), "--no-ui"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.communicate()[1]
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer within 60 s"
                time.sleep(0.1)
        yield f"{base}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _post(url: str) -> int:
    request = urllib.request.Request(
        url,
        INITIALIZE,
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_a_burst_against_a_keyless_server_gets_no_429(tmp_path: Path) -> None:
    """60 connections at once, then 300 requests in all: past the 32 unauthenticated connections
    one address had and past the rate's burst of 200."""
    with _serving(tmp_path / "data") as url:
        statuses: Counter[int] = Counter()
        lock, start = threading.Lock(), threading.Barrier(60)

        def client() -> None:
            start.wait(30)
            for _ in range(5):
                status = _post(url)
                with lock:
                    statuses[status] += 1

        threads = [threading.Thread(target=client) for _ in range(60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert statuses == Counter({200: 300})


def test_the_one_tenant_defaults_keep_what_is_set_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_TENANT_INGEST_CONCURRENCY", "3")
    free = Settings.load().for_one_tenant()
    assert (free.tenant_requests_per_second, free.connections_per_address) == (0.0, 0)
    assert free.tenant_ingest_concurrency == 3  # explicit: kept


def test_the_python_client_waits_out_a_keyed_servers_rate(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.toml").write_text('[api_keys]\n"key-alice" = "alice"\n')
    rate = {"REARVIEW_TENANT_REQUESTS_PER_SECOND": "4", "REARVIEW_TENANT_REQUEST_BURST": "3"}
    with _serving(data, **rate) as url, Memory(url=url, api_key="key-alice") as memory:
        ids = [memory.write(f"Fact number {i} about the release train").id for i in range(8)]
        assert len(set(ids)) == 8  # every write landed, none failed on the rate's 429


def _refusing(
    times: int, status: int = 429, retry_after: str = "0"
) -> tuple[list[int], httpx2.MockTransport]:
    sent: list[int] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(len(sent))
        if len(sent) <= times:
            return httpx2.Response(status, headers={"Retry-After": retry_after})
        return httpx2.Response(200, json={"ok": True})

    return sent, httpx2.MockTransport(answer)


@pytest.mark.parametrize(
    ("times", "status", "retry_after", "sends", "answer"),
    [
        (2, 429, "0", 3, 200),  # waited out, sent again
        (2, 503, "0", 3, 200),
        (ATTEMPTS, 429, "0", ATTEMPTS, 429),  # gives up: the refusal is the answer
        (1, 429, "3600", 1, 429),  # longer than anyone should block: returned at once
        (1, 429, "soon", 1, 429),  # not a number or a date
        (1, 500, "0", 1, 500),  # not a refusal to wait out
    ],
)
def test_the_transport_retries_only_refusals_it_can_wait_out(
    times: int, status: int, retry_after: str, sends: int, answer: int
) -> None:
    sent, inner = _refusing(times, status, retry_after)

    async def run() -> int:
        async with httpx2.AsyncClient(transport=RetryAfterTransport(inner)) as http:
            return (await http.post("http://server/mcp", content=b"{}")).status_code

    assert anyio.run(run) == answer
    assert len(sent) == sends


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after_of(httpx2.Response(429, headers={"Retry-After": "2"})) == 2.0
    dated = httpx2.Response(429, headers={"Retry-After": "Sun, 06 Dec 2026 14:00:10 GMT"})
    assert retry_after_of(dated, now=1796565600.0) == 10.0  # 2026-12-06 14:00:00 UTC
    assert retry_after_of(httpx2.Response(429)) is None
    assert (
        retry_after_of(
            httpx2.Response(429, headers={"Retry-After": "Sun, 06 Dec 2026 14:00:05 -0000"}), now=1796565600.0
        )
        == 5.0
    )
