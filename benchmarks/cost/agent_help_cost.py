#!/usr/bin/env python
"""What the agent's help costs (issue 44): a write with 3 recall cues against one without, and the
index bytes each memory takes with and without cues, on SQLite and (`--opensearch`) OpenSearch.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/agent_help_cost.py \\
        [--memories 300] [--rounds 3] [--embedder onnx] [--opensearch] [--everyday DATASET]

Writes: the same `--memories` synthetic memories (`synthetic_memories.Corpus`) are written one
`memory_write` at a time into two fresh embedded services (SQLite store and index, the local e5
embedder), one without cues and one with three cues per memory, each cue shaped as an assistant
writes them (a question in other words, the same in Chinese, a short topic; 20-60 characters). The
two alternate in `--rounds` rounds in one process, and the report is the CPU and wall time per write
and their ratio (the issue's budget: 2x). Index bytes: each service's index file after a WAL
checkpoint, per memory. With `--opensearch`, the same memories and vectors are bulk-written into two
indexes of a real node (`REARVIEW_OPENSEARCH_URL`, or one the test harness starts), force-merged to
one segment, and `_stats/store` is divided by the memory count. `--everyday` writes a hand-written
set's memories with the cues an assistant wrote for them (`<dataset>_cues.json` beside it, as
`everyday_recall.py --help-mode with` does) instead of the synthetic ones. `--served` times the same
writes as an agent makes them, through two real `rearview serve` processes (one a side, the local e5
embedder, alternating rounds) and the official `mcp` client: the server's CPU per `memory_write` (from
/proc, all its threads) and the client's wall time per call.

Search cost with alternatives is measured under load by `benchmarks/speed/concurrent_search.py
--alternatives 0,2`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `rearview serve` runs (cli.parser)

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

from benchmarks.common.local_embedders import LOCAL_EMBEDDERS, local_embedder
from benchmarks.common.machine import cpu_model
from benchmarks.common.synthetic_memories import Corpus, Synthetic
from rearview.backends.sqlite_index import SQLiteMemoryIndex
from rearview.backends.sqlite_store import SQLiteMemoryStore
from rearview.bootstrap import build_config
from rearview.config.settings import Settings
from rearview.models import MemoryType, Visibility, WriteRequest
from rearview.ports import Embedder
from rearview.service.memory_service import MemoryService

TENANT = "cost"


Written = tuple[Synthetic, list[str]]
"""A memory to write and its cues."""


def everyday_memories(dataset: Path, limit: int) -> list[Written]:
    """The set's memories (in user order) with the assistant's cues, as `Synthetic` records.

    Standalone, as `everyday_recall.py` writes them: no session (`session_id` "").
    """
    data = json.loads(dataset.read_text(encoding="utf-8"))
    cues = json.loads(dataset.with_name(f"{dataset.stem}_cues.json").read_text(encoding="utf-8"))
    out: list[Written] = []
    for user in data["users"]:
        for m in user["memories"]:
            s = Synthetic(m["content"], MemoryType(m["type"]), [], "", "default", Visibility.SHARED, 3, 0.0)
            out.append((s, cues.get(m["key"], [])[:3]))
    return out[:limit]


def cues_for(s: Synthetic) -> list[str]:
    """Three cues shaped like an assistant's: a question, the same in Chinese, a topic phrase."""
    words = s.content.rstrip(".").split()
    topic = " ".join(words[:4])
    return [f"What do we know about {topic.lower()}?", f"关于{topic}的记录是什么？", " ".join(words[-3:])]


@dataclass(slots=True)
class Side:
    """One service and what its writes cost."""

    name: str
    service: MemoryService
    index_path: Path
    cpu_s: float = 0.0
    wall_s: float = 0.0
    writes: int = 0

    def write(self, s: Synthetic, cues: list[str]) -> None:
        req = WriteRequest(
            content=s.content,
            type=s.type,
            tags=s.tags,
            session_id=s.session_id or None,
            importance=s.importance,
            cues=cues,
        )
        cpu, wall = time.process_time(), time.perf_counter()
        self.service.write(TENANT, req)
        self.cpu_s += time.process_time() - cpu
        self.wall_s += time.perf_counter() - wall
        self.writes += 1

    def index_bytes(self) -> int:
        with sqlite3.connect(self.index_path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return self.index_path.stat().st_size


def side(name: str, root: Path, embedder: Embedder) -> Side:
    folder = root / name
    folder.mkdir()
    store = SQLiteMemoryStore(folder / "store.sqlite3")
    index = SQLiteMemoryIndex(folder / "index.sqlite3", embedder.dimension)
    store.ensure_schema()
    index.ensure_schema()
    config = build_config(
        Settings(embedder=embedder.model_id.split(":", 1)[0]), embedder
    )  # as `rearview serve`
    return Side(name, MemoryService(store, index, embedder, config=config), folder / "index.sqlite3")


def passes(embedder: Embedder, memories: Sequence[Written]) -> None:
    """The e5 passes alone, per memory: its content's, and its cues' (each cue one call, as a write
    embeds them: one text a pass), in CPU ms; what a write pays the embedder with and without cues."""
    content = time.process_time()
    for s, _ in memories:
        embedder.embed_documents([s.content])
    content = time.process_time() - content
    cues = time.process_time()
    for _, texts in memories:
        for text in texts:
            embedder.embed_documents([text])
    cues = time.process_time() - cues
    n = len(memories)
    print(
        f"  e5 passes alone: the content {1000 * content / n:.2f} ms/memory,"
        f" its {sum(len(c) for _, c in memories) / n:.1f} cues {1000 * cues / n:.2f} ms/memory (CPU)"
    )


async def _served_writes(url: str, pid: int, memories: Sequence[Written], cued: bool) -> tuple[float, float]:
    """`memory_write` each memory over one MCP session: (server CPU s, wall s) of the writes."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from benchmarks.common.machine import cpu_s

    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await client.call_tool("memory_write", {"content": f"A first note ({cued=}) to warm the session."})
        cpu, wall = cpu_s(pid), time.perf_counter()
        for s, cues in memories:
            arguments: dict[str, object] = {"content": s.content, "type": s.type.value}
            if cued:
                arguments["cues"] = cues
            result = await client.call_tool("memory_write", arguments)
            if result.is_error:
                raise RuntimeError(f"memory_write failed: {result.content}")
        return cpu_s(pid) - cpu, time.perf_counter() - wall


def served(memories: Sequence[Written], rounds: int) -> None:
    """Both sides' writes through `rearview serve` (the local e5 embedder), alternating by round."""
    import anyio

    from benchmarks.common.server import serving

    per_round = len(memories) // rounds
    totals = {"plain": [0.0, 0.0], "cued": [0.0, 0.0]}
    with tempfile.TemporaryDirectory(prefix="rearview-help-served-") as tmp:
        root = Path(tmp)
        (root / "plain").mkdir()
        (root / "cued").mkdir()
        env = {"REARVIEW_EMBEDDER": "onnx"}
        with (
            serving(root / "plain", env, root / "plain.log") as plain,
            serving(root / "cued", env, root / "cued.log") as cued,
        ):
            for r in range(rounds):
                chunk = memories[r * per_round : (r + 1) * per_round]
                for name, (url, pid) in (("plain", plain), ("cued", cued)):
                    cpu, wall = anyio.run(_served_writes, url, pid, chunk, name == "cued")
                    totals[name][0] += cpu
                    totals[name][1] += wall
    n = per_round * rounds
    print(f"served (rearview serve, official mcp client, {n} writes a side):")
    for name, (cpu, wall) in totals.items():
        print(f"  {name:<6} server CPU {1000 * cpu / n:7.2f} ms/write   wall {1000 * wall / n:7.2f} ms/write")
    (pc, pw), (cc, cw) = totals["plain"], totals["cued"]
    print(f"  with 3 cues / without: server CPU {cc / pc:.2f}x, wall {cw / pw:.2f}x")


def opensearch_bytes(memories: Sequence[Written], embedder: Embedder) -> tuple[float, float]:
    """Bytes per memory on a real OpenSearch node without and with cues (one merged segment each)."""
    from benchmarks.common.synthetic_memories import to_memory
    from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex
    from rearview.models import Cue
    from rearview.ports import IndexDocument
    from tests.engines.opensearch_node import OpenSearchNode, external_url

    url = external_url()
    node = None if url else OpenSearchNode.start(heap="1g")
    out = []
    try:
        for with_cues in (False, True):
            config = OpenSearchConfig(
                endpoint=url or node.url,  # type: ignore[union-attr]
                dimension=embedder.dimension, mode="local", engine="lucene", shards=1, replicas=0,
                refresh="false", alias=f"rv-cost-{uuid4().hex[:8]}", timeout_s=60.0,
            )  # fmt: skip
            index = OpenSearchMemoryIndex(config)
            index.ensure_schema()
            now = datetime.now(UTC)
            docs = []
            for start in range(0, len(memories), 100):
                batch = memories[start : start + 100]
                vectors = embedder.embed_documents([s.content for s, _ in batch])
                for (s, cues), vector in zip(batch, vectors, strict=True):
                    memory = to_memory(s, now, "bench")
                    cue_vectors = None
                    if with_cues:
                        memory = memory.model_copy(
                            update={"cues": [Cue(text=c, by=s.agent_id) for c in cues]}
                        )
                        cue_vectors = embedder.embed_documents(cues)
                    docs.append(IndexDocument(memory, vector, cue_vectors=cue_vectors))
            index.upsert(docs)
            name = index.config.index_name(1)
            index.client.indices.refresh(index=name)
            index.client.indices.forcemerge(index=name, max_num_segments=1)
            stats = index.client.indices.stats(index=name, metric="store")
            out.append(stats["indices"][name]["primaries"]["store"]["size_in_bytes"] / len(memories))
    finally:
        if node is not None:
            node.stop()
    return out[0], out[1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--embedder", choices=LOCAL_EMBEDDERS, default="onnx")
    parser.add_argument("--opensearch", action="store_true", help="also measure a real OpenSearch node")
    parser.add_argument(
        "--everyday", type=Path, help="write this hand-written set's memories and cues instead"
    )
    parser.add_argument(
        "--served", action="store_true", help="also time the writes served (rearview serve, MCP client)"
    )
    args = parser.parse_args(argv)
    if args.memories < args.rounds or args.rounds < 1:
        raise SystemExit("--memories must be at least --rounds, and --rounds at least 1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    embedder = local_embedder(args.embedder)
    if args.everyday:
        memories = everyday_memories(args.everyday, args.memories)
    else:
        corpus = iter(Corpus(random.Random(44)))
        memories = [(s, cues_for(s)) for s in (next(corpus) for _ in range(args.memories))]
    embedder.embed_documents(["warm-up"])
    with tempfile.TemporaryDirectory(prefix="rearview-help-cost-") as tmp:
        plain, cued = side("plain", Path(tmp), embedder), side("cued", Path(tmp), embedder)
        per_round = len(memories) // args.rounds
        for r in range(args.rounds):
            chunk = memories[r * per_round : (r + 1) * per_round]
            for s, _ in chunk:
                plain.write(s, [])
            for s, cues in chunk:
                cued.write(s, cues)
        sizes = {x.name: x.index_bytes() / x.writes for x in (plain, cued)}
        print(f"machine: {cpu_model()}; embedder {embedder.model_id}; {plain.writes} writes a side")
        for x in (plain, cued):
            print(
                f"  {x.name:<6} CPU {1000 * x.cpu_s / x.writes:7.2f} ms/write"
                f"   wall {1000 * x.wall_s / x.writes:7.2f} ms/write"
                f"   SQLite index {sizes[x.name]:8.0f} bytes/memory"
            )
        print(
            f"  with 3 cues / without: CPU {cued.cpu_s / plain.cpu_s:.2f}x,"
            f" wall {cued.wall_s / plain.wall_s:.2f}x, SQLite index {sizes['cued'] / sizes['plain']:.2f}x"
        )
    passes(embedder, memories)
    if args.served:
        served(memories, args.rounds)
    if args.opensearch:
        without, with_cues = opensearch_bytes(memories, embedder)
        print(
            f"  OpenSearch (lucene, one merged segment): {without:.0f} -> {with_cues:.0f} bytes/memory"
            f" ({with_cues / without:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
