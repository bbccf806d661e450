#!/usr/bin/env python
"""docs/cost.md's tables, from measured units: per operation, and a month for three deployments.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/cost_tables.py
        [--units benchmarks/cost/aws_units.json] [--scale PATH] [--lifecycle DIR] [--write docs/cost.md]

`--units` is `aws_units.py --json`'s output (committed: benchmarks/cost/aws_units.json). `--scale`
is optional: a file whose last JSON line is the OpenSearch scale benchmark's summary
(`benchmarks/scale/`: `bytes_per_memory`, `docs_per_s`, `small_p95_ms`, ...); its index bytes per
memory and load rate then replace this model's own estimates. `--lifecycle` is a folder of
`benchmarks/speed/lifecycle_load.py --json` outputs (committed: benchmarks/cost/lifecycle/), for the
lifecycle table between `<!-- lifecycle-figures:start -->` and `<!-- lifecycle-figures:end -->`.
Prices and assumptions: `aws_prices.py`. Without `--write` it prints the tables; with it, it
replaces the text between `<!-- cost-tables:start -->` and `<!-- cost-tables:end -->` (and the
lifecycle markers) in that file; a test checks docs/cost.md holds exactly this script's output.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cost import aws_prices as prices

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "benchmarks" / "cost" / "aws_units.json"
START, END = "<!-- cost-tables:start -->", "<!-- cost-tables:end -->"
LIFECYCLE_START, LIFECYCLE_END = "<!-- lifecycle-figures:start -->", "<!-- lifecycle-figures:end -->"
LIFECYCLE_RUNS = ROOT / "benchmarks" / "cost" / "lifecycle"
"""The committed `lifecycle_load.py --json` outputs docs/cost.md's lifecycle table is made from."""
OPERATIONS = {
    "write": "`memory_write` (one memory)",
    "search": "`memory_search`",
    "ingest": "`memory_ingest` (20 messages)",
    "lifecycle_idle_run": "lifecycle run, per tenant, nothing due (decay + archive)",
    "lifecycle_decay_due": "decay, per memory archived",
    "lifecycle_archive_due": "archive, per memory archived",
    "lifecycle_first_run": "first run, per memory (the full scan that builds the due order)",
    "lifecycle_new_writes": "later run, per memory written since (examined once, scheduled)",
    "reconcile": "reconcile, per memory",
}


@dataclass(frozen=True)
class Op:
    """One operation's units (per unit of `count`)."""

    rru: float
    wru: float
    ddb_requests: float
    s3_puts: float
    s3_gets: float
    s3_kb_put: float
    os_requests: float
    os_took_ms: float
    embeds: float
    embed_chars: float
    cpu_ms: float

    def lambda_ms(self, memory_mb: int) -> float:
        """Billed duration: CPU stretched to the function's vCPU share, plus the waits for AWS."""
        lat = prices.ASSUMED_LATENCY_MS
        cpu = self.cpu_ms * max(1.0, prices.LAMBDA_FULL_VCPU_MB / memory_mb)
        waits = (
            self.ddb_requests * lat["dynamodb"]
            + (self.s3_puts + self.s3_gets) * lat["s3"]
            + self.os_requests * lat["opensearch"]
            + self.os_took_ms
            + self.embeds * lat["bedrock"]
        )
        return cpu + waits

    def dollars(self, memory_mb: int, invoked: bool) -> float:
        """What one costs in requests and compute (storage apart); `invoked`: a request of its own."""
        price = prices.PRICE
        cost = (
            self.rru * price["dynamodb_per_million_rru"] / 1e6
            + self.wru * price["dynamodb_per_million_wru"] / 1e6
        )
        cost += (
            self.s3_puts * price["s3_per_thousand_put"] / 1e3
            + self.s3_gets * price["s3_per_thousand_get"] / 1e3
        )
        cost += self.embed_chars / prices.CHARS_PER_TOKEN * price["titan_embed_v2_per_million_tokens"] / 1e6
        cost += self.lambda_ms(memory_mb) / 1000 * memory_mb / 1024 * price["lambda_gb_second"]
        if invoked:
            cost += (price["lambda_per_million_requests"] + price["http_api_per_million_requests"]) / 1e6
        return cost


def operations(units: dict[str, Any]) -> dict[str, Op]:
    out = {}
    for name, raw in units["operations"].items():
        n = raw["count"]
        s3 = raw["s3_calls"]
        out[name] = Op(
            rru=raw["rru"] / n,
            wru=raw["wru"] / n,
            ddb_requests=sum(raw["ddb_calls"].values()) / n,
            s3_puts=(s3.get("PutObject", 0) + s3.get("DeleteObject", 0) + s3.get("ListObjectsV2", 0)) / n,
            s3_gets=s3.get("GetObject", 0) / n,
            s3_kb_put=raw["s3_bytes_put"] / 1024 / n,
            os_requests=sum(raw["os_calls"].values()) / n,
            os_took_ms=raw["os_took_ms"] / n,
            embeds=raw["embedded_texts"] / n,
            embed_chars=raw["embedded_chars"] / n,
            cpu_ms=1000 * raw["cpu_s"] / n,
        )
    return out


def lifecycle_runs(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def last_json_line(path: Path) -> dict[str, Any]:
    for line in reversed(path.read_text(encoding="utf-8").splitlines()):
        if line.strip().startswith("{"):
            return dict(json.loads(line))
    raise SystemExit(f"{path}: no JSON line")


# --------------------------------------------------------------------------------- the month


@dataclass(frozen=True)
class Month:
    """One deployment's month: line items in dollars, and how OpenSearch was sized."""

    lines: dict[str, float]
    serverless: float
    serverless_sizing: str
    domain: float
    domain_sizing: str


def index_bytes_per_memory(units: dict[str, Any], scale: dict[str, Any] | None) -> float:
    """Index bytes per memory at the deployed dimension: the scale run's, else ours with 1024-d vectors."""
    if scale is not None and "bytes_per_memory" in scale:
        return float(scale["bytes_per_memory"])
    storage = units["storage"]
    extra = (prices.EMBEDDING_DIMENSION - storage["opensearch_dimension"]) * 4 * prices.GRAPH_OVERHEAD
    return float(storage["opensearch_bytes_per_doc"]) + extra


def month(name: str, ops: dict[str, Op], units: dict[str, Any], scale: dict[str, Any] | None) -> Month:
    w = prices.WORKLOADS[name]
    days, price = prices.DAYS_PER_MONTH, prices.PRICE
    archived_per_day = w["writes"] + 20 * w["ingests"]  # = written a day: each examined once, then archived
    archive_op = _mean(ops["lifecycle_decay_due"], ops["lifecycle_archive_due"])
    volumes = [  # (op, per month, memory MB, a request of its own)
        (ops["write"], w["writes"] * days, prices.MCP_MEMORY_MB, True),
        (ops["search"], w["searches"] * days, prices.MCP_MEMORY_MB, True),
        (ops["ingest"], w["ingests"] * days, prices.MCP_MEMORY_MB, True),
        (
            ops["lifecycle_idle_run"],
            w["tenants"] * prices.LIFECYCLE_RUNS_PER_DAY * days,
            prices.JOBS_MEMORY_MB,
            False,
        ),
        (ops["lifecycle_new_writes"], archived_per_day * days, prices.JOBS_MEMORY_MB, False),
        (archive_op, archived_per_day * days, prices.JOBS_MEMORY_MB, False),
        (ops["reconcile"], w["memories"] * prices.RECONCILE_RUNS_PER_MONTH, prices.JOBS_MEMORY_MB, False),
    ]
    ddb = sum(
        (o.rru * price["dynamodb_per_million_rru"] + o.wru * price["dynamodb_per_million_wru"]) / 1e6 * n
        for o, n, _, _ in volumes
    )
    compute = sum(
        (o.lambda_ms(mb) / 1000 * mb / 1024 * price["lambda_gb_second"]) * n
        + (price["lambda_per_million_requests"] + price["http_api_per_million_requests"]) / 1e6 * n * inv
        for o, n, mb, inv in volumes
    )
    embeds = sum(o.embed_chars * n for o, n, _, _ in volumes) / prices.CHARS_PER_TOKEN
    stubs_after_a_year = archived_per_day * 365
    ddb_gb = (w["memories"] + stubs_after_a_year) * units["storage"]["dynamodb_bytes_per_memory"] / 1e9
    archive_kb = archive_op.s3_kb_put
    s3 = sum(
        (o.s3_puts * price["s3_per_thousand_put"] + o.s3_gets * price["s3_per_thousand_get"]) / 1e3 * n
        for o, n, _, _ in volumes
    )
    s3 += stubs_after_a_year * archive_kb / 1e6 * price["s3_storage_gb_month"]
    lines = {
        "DynamoDB requests": ddb,
        "DynamoDB storage + PITR (after a year)": ddb_gb
        * (price["dynamodb_storage_gb_month"] + price["dynamodb_pitr_gb_month"]),
        "Lambda + HTTP API": compute,
        "Bedrock embeddings": embeds * price["titan_embed_v2_per_million_tokens"] / 1e6,
        "S3 archive (requests + a year's objects)": s3,
    }
    index_gb = w["memories"] * index_bytes_per_memory(units, scale) / 1e9
    serverless, serverless_sizing = _serverless(w, index_gb, ops, scale)
    domain, domain_sizing = _domain(name, w, index_gb)
    return Month(lines, serverless, serverless_sizing, domain, domain_sizing)


def _vector_gb(memories: int) -> float:
    return memories * prices.EMBEDDING_DIMENSION * 4 * prices.GRAPH_OVERHEAD / 1e9


def _serverless(
    w: dict[str, int], index_gb: float, ops: dict[str, Op], scale: dict[str, Any] | None
) -> tuple[float, str]:
    search_cpu = w["searches"] / 86_400 * ops["search"].os_took_ms / 1000 / prices.SEARCH_CPU_S_PER_OCU
    search = _ocus(max(_vector_gb(w["memories"]) / prices.AOSS_GRAPH_GB_PER_OCU, search_cpu))
    docs_per_s = float(scale["docs_per_s"]) if scale and "docs_per_s" in scale else 500.0
    indexing = _ocus((w["writes"] + 20 * w["ingests"]) / 86_400 / docs_per_s)
    ocus = max(prices.AOSS_MIN_OCU["redundant"], 2 * (search + indexing))
    cost = (
        ocus * prices.HOURS_PER_MONTH * prices.PRICE["aoss_ocu_hour"]
        + index_gb * prices.PRICE["aoss_storage_gb_month"]
    )
    return cost, f"{ocus:g} OCU ({2 * search:g} search, {2 * indexing:g} indexing, standby on)"


def _ocus(need: float) -> float:
    """OCUs for a need: half an OCU, then one, then whole OCUs (how Serverless scales)."""
    return 0.5 if need <= 0.5 else float(math.ceil(need))


def _domain(name: str, w: dict[str, int], index_gb: float) -> tuple[float, str]:
    nodes = 1 if name == "hobbyist" else 2  # one replica beyond the hobbyist
    need = _vector_gb(w["memories"]) / prices.KNN_RAM_SHARE  # every node holds a full copy
    kind, hourly, ram = next(
        ((k, h, r) for k, h, r in prices.AOS_INSTANCES if r >= need), prices.AOS_INSTANCES[-1]
    )
    if ram < need:  # shard the vectors over more nodes of the largest type
        nodes *= math.ceil(need / ram)
    disk = max(10.0 * nodes, index_gb * (2 if name != "hobbyist" else 1) * 1.25)
    cost = nodes * hourly * prices.HOURS_PER_MONTH + disk * prices.PRICE["aos_gp3_gb_month"]
    return cost, f"{nodes} x {kind}, {disk:.0f} GB gp3"


def _mean(a: Op, b: Op) -> Op:
    return Op(*((x + y) / 2 for x, y in zip(vars(a).values(), vars(b).values(), strict=True)))


# -------------------------------------------------------------------------------------- render


def render(units: dict[str, Any], scale: dict[str, Any] | None = None) -> str:
    ops = operations(units)
    out = [f"Prices: us-east-1 list prices recorded {prices.PRICES_AS_OF} (`benchmarks/cost/aws_prices.py`). "
           f"Units: `aws_units.py` on {units['cpu']}, load average {units['load_before']}.", ""]  # fmt: skip
    out += [
        "| operation | RRU | WRU | DynamoDB requests | S3 requests | OpenSearch requests | engine `took` ms"
        " | embeddings | CPU ms | Lambda ms (1024 MB) | $ per million |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, label in OPERATIONS.items():
        o = ops[name]
        mb = prices.MCP_MEMORY_MB if name in ("write", "search", "ingest") else prices.JOBS_MEMORY_MB
        out.append(
            f"| {label} | {o.rru:.1f} | {o.wru:.1f} | {o.ddb_requests:.1f} | {o.s3_puts + o.s3_gets:.2f}"
            f" | {o.os_requests:.2f} | {o.os_took_ms:.1f} | {o.embeds:.1f} | {o.cpu_ms:.1f}"
            f" | {o.lambda_ms(mb):.0f} | {1e6 * o.dollars(mb, name in ('write', 'search', 'ingest')):,.2f} |"
        )
    months = {name: month(name, ops, units, scale) for name in prices.WORKLOADS}
    out += ["", "| a month, in dollars | " + " | ".join(months) + " |", "|---|" + "--:|" * len(months)]
    for line in next(iter(months.values())).lines:
        out.append(f"| {line} | " + " | ".join(f"{m.lines[line]:,.2f}" for m in months.values()) + " |")
    out.append(
        "| OpenSearch Serverless | " + " | ".join(f"{m.serverless:,.2f}" for m in months.values()) + " |"
    )
    out.append(
        "| OpenSearch managed domain | " + " | ".join(f"{m.domain:,.2f}" for m in months.values()) + " |"
    )
    for label, pick in (("with Serverless", "serverless"), ("with a managed domain", "domain")):
        totals = [sum(m.lines.values()) + getattr(m, pick) for m in months.values()]
        out.append(f"| **total {label}** | " + " | ".join(f"**{t:,.0f}**" for t in totals) + " |")
    out += ["", "| OpenSearch sized as | " + " | ".join(months) + " |", "|---|" + "---|" * len(months)]
    out.append("| Serverless | " + " | ".join(m.serverless_sizing for m in months.values()) + " |")
    out.append("| managed domain | " + " | ".join(m.domain_sizing for m in months.values()) + " |")
    source = (
        "the scale benchmark's" if scale and "bytes_per_memory" in scale else "this model's (1024-d vectors)"
    )
    out += ["", f"Index bytes per memory: {index_bytes_per_memory(units, scale):,.0f} ({source})."]
    return "\n".join(out) + "\n"


def lifecycle_table(runs: list[dict[str, Any]], units: dict[str, Any]) -> str:
    """The lifecycle load runs (`lifecycle_load.py --json`): a row per run and job, and the extrapolation."""
    out = [
        "| backend | memories | seeded as | job | first run: read / due, s, runs"
        " | a day later: read / due, s | a week later: read / due, s | load average |",
        "|---|--:|---|---|---|---|---|---|",
    ]
    for run in sorted(runs, key=lambda r: (r["backend"], r["n"], r.get("established", False))):
        rounds = {r["label"]: r for r in run["rounds"]}
        shape = "built due order" if run.get("established") else "new (first run scans)"
        for job in rounds["first"]["read"]:
            cells = []
            for label in ("first", "a day later", "a week later"):
                r = rounds.get(label)
                if r is None:
                    cells.append("-")
                    continue
                k = r["invocations"][job]
                runs_note = f", {k} run{'s' if k > 1 else ''}" if label == "first" else ""
                cells.append(f"{r['read'][job]:,} / {r['due'][job]:,}, {r['seconds'][job]:.1f} s{runs_note}")
            out.append(
                f"| {run['backend']} | {run['n']:,} | {shape} | {job} | "
                + " | ".join(cells)
                + f" | {run['load_before']} |"
            )
    out += ["", _extrapolation(runs, units)]
    return "\n".join(out) + "\n"


def _extrapolation(runs: list[dict[str, Any]], units: dict[str, Any]) -> str:
    """A day's archiving at 1M memories on AWS: the largest run's due share times the measured Lambda time."""
    largest = max(runs, key=lambda r: r["n"])
    later = next(r for r in largest["rounds"] if r["label"] == "a day later")
    share = sum(later["due"].get(job, 0) for job in ("decay", "archive")) / largest["n"]
    ops = operations(units)
    per_memory_ms = _mean(ops["lifecycle_decay_due"], ops["lifecycle_archive_due"]).lambda_ms(
        prices.JOBS_MEMORY_MB
    )
    first_ms = ops["lifecycle_first_run"].lambda_ms(prices.JOBS_MEMORY_MB)
    day_s = 1_000_000 * share * per_memory_ms / 1000
    first_h = 1_000_000 * first_ms / 1000 / 3600
    return (
        f"Extrapolated (not measured) to 1,000,000 memories on AWS: a day brings {share:.1%} of them due"
        f" (the {largest['n']:,}-memory run), {day_s:,.0f} s of Lambda at {per_memory_ms:.0f} ms per memory"
        f" archived ({day_s / 24:,.0f} s an hour); a first full scan at {first_ms:.0f} ms per memory takes"
        f" {first_h:,.1f} hours of runs ({math.ceil(first_h * 3600 / 885)} invocations of 885 s)."
    )


def replace_between_markers(text: str, tables: str, start: str = START, end: str = END) -> str:
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{tables}{end}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=Path, default=UNITS)
    parser.add_argument("--scale", type=Path)
    parser.add_argument(
        "--lifecycle", type=Path, default=LIFECYCLE_RUNS, help="folder of lifecycle_load JSONs"
    )
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    units = json.loads(args.units.read_text(encoding="utf-8"))
    tables = render(units, last_json_line(args.scale) if args.scale else None)
    lifecycle = lifecycle_table(lifecycle_runs(args.lifecycle), units)
    if args.write:
        text = replace_between_markers(args.write.read_text(encoding="utf-8"), tables)
        text = replace_between_markers(text, lifecycle, LIFECYCLE_START, LIFECYCLE_END)
        args.write.write_text(text)
    else:
        print(tables, lifecycle, sep="\n", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
