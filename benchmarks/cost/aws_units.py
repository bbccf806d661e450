#!/usr/bin/env python
"""What one write, search, ingest and lifecycle run asks of AWS: the units docs/cost.md prices.

Runs Rearview's AWS shape in process: the DynamoDB store and the S3 archive on moto (table and
bucket from template.yaml), the OpenSearch index on a real engine (the test node, started here
unless `--opensearch URL` names one), the hashing embedder (its calls are counted: on AWS each
is a Bedrock request). Every DynamoDB, S3 and OpenSearch call is metered (`aws_meters`), and each
operation's in-process CPU time is measured with moto's share taken out.

One tenant of `--memories` memories is written one `memory_write` at a time, searched
`--searches` times, sent `--ingests` `memory_ingest` calls of 20 messages, and then run through
the lifecycle jobs: a first `decay` + `archive` (the full scan that builds the due order), an
idle run (nothing due: what every tenant costs per scheduled run), a later run after `--memories`
/ 10 more writes (each memory written since is examined once and scheduled: per memory written),
`decay` 120 days later (the
importance-3 memories have faded) and `archive` on day 364 (the importance-4 ones expire within
the look-ahead), each priced per memory archived; `reconcile` once, before them (per memory). Memories written
by `memory_write` have importance 3 or 4 so that both jobs find them before their TTL does.

    PYTHONPATH=functions:. .venv/bin/python benchmarks/cost/aws_units.py [--memories 200]
        [--searches 100] [--ingests 5] [--opensearch URL] [--json benchmarks/cost/aws_units.json]

Prints a table per operation and, last, one JSON line (the input of `cost_tables.py`).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

from benchmarks.common.machine import cpu_model, loadavg
from benchmarks.cost.aws_meters import (
    DynamoDBMeter,
    MotoClock,
    OpenSearchMeter,
    S3Meter,
    Usage,
    app_cpu,
)
from rearview.embedders.hashing import HashingEmbedder
from rearview.embedders.wrapping import EmbedderWrapper
from rearview.models import IngestRequest, SearchRequest, WriteRequest
from rearview.ports import Vector
from rearview.shared.clock import ManualClock

NOW = datetime.fromisoformat("2026-06-01T00:00:00+00:00")
DIMENSION = 256
TENANT = "cost"
TOPICS = [
    "the staging database",
    "the deploy pipeline",
    "Ann's travel plans",
    "the quarterly invoice",
    "the printer on floor 3",
    "the Rust rewrite",
    "the cache eviction bug",
    "lunch on Fridays",
    "the API rate limits",
    "the backup schedule",
]
DETAILS = [
    "was moved to eu-west-1 after the outage",
    "needs a second reviewer from now on",
    "prefers window seats and morning flights",
    "is due on the 15th and goes to finance",
    "jams when printing duplex, use tray 2",
    "is blocked on the async trait stabilisation",
    "came from a TTL of zero in the config",
    "is at the Thai place unless it rains",
    "are 50 requests a second per key",
    "runs at 02:00 UTC and keeps 30 days",
]


class CountingEmbedder(EmbedderWrapper):
    """The hashing embedder, counting the texts and characters it embeds (a Bedrock request each)."""

    def __init__(self, inner: HashingEmbedder, usage: Callable[[], Usage]) -> None:
        super().__init__(inner)
        self.usage = usage

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self.usage().embedded_texts += len(texts)
        self.usage().embedded_chars += sum(len(t) for t in texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        self.usage().embedded_texts += 1
        self.usage().embedded_chars += len(text)
        return self._inner.embed_query(text)


@contextmanager
def aws_shape(opensearch_url: str) -> Iterator[tuple[Any, Any, Any, ManualClock]]:
    """(service, meters' shared state, lifecycle factory, clock) over moto + the OpenSearch node."""
    import boto3
    from moto import mock_aws

    from rearview.backends.dynamodb import DynamoDBCheckpointStore, DynamoDBMemoryStore
    from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex
    from rearview.backends.s3_archive import S3Archive
    from rearview.service.memory_service import MemoryService
    from tests.fixtures.aws import (
        REGION,
        create_table_kwargs,
        one_backup_per_transaction,
        resource_properties,
    )
    from tests.lifecycle_load_scenario import fake_aws_credentials

    with ExitStack() as stack:
        stack.enter_context(fake_aws_credentials(REGION))
        stack.enter_context(mock_aws())
        stack.enter_context(one_backup_per_transaction())  # moto copied the table once per action
        kwargs = create_table_kwargs(resource_properties("MemoryTable"))
        # moto keeps every stream record in memory and copies them with each transaction's backup
        # (10 GB at 300 memories); a stream is no table unit, and nothing here reads it
        kwargs.pop("StreamSpecification", None)
        raw = boto3.client("dynamodb", region_name=REGION)
        raw.create_table(**kwargs)
        table = kwargs["TableName"]
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="rearview-cost")
        meter = DynamoDBMeter(dynamodb, raw, table)
        S3Meter(s3, meter)
        config = OpenSearchConfig(
            endpoint=opensearch_url,
            dimension=DIMENSION,
            mode="local",
            engine="lucene",
            shards=1,
            replicas=0,
            alias=f"rv-cost-{uuid4().hex[:8]}",
            timeout_s=15.0,
        )
        index = OpenSearchMemoryIndex(config)
        stack.callback(lambda: index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404]))
        OpenSearchMeter(index.client, meter)
        clock = ManualClock(NOW)
        service = MemoryService(
            DynamoDBMemoryStore(table, dynamodb, clock=clock),
            index,
            CountingEmbedder(HashingEmbedder(DIMENSION), lambda: meter.usage),
            clock,
            archive=S3Archive("rearview-cost", client=s3, clock=clock),
        )
        service.store.ensure_schema()
        index.ensure_schema()
        checkpoints = DynamoDBCheckpointStore(table, dynamodb, clock=clock)
        yield service, meter, checkpoints, clock


def write_memories(service: Any, clock: ManualClock, rng: random.Random, n: int, first: int = 0) -> None:
    """`n` memory_writes, a minute apart, of importance 3 or 4 (the lifecycle finds them before TTL)."""
    for i in range(first, first + n):
        content = f"{rng.choice(TOPICS)} {rng.choice(DETAILS)} (note {i})"
        service.write(TENANT, WriteRequest(content=content, importance=rng.choice((3, 4))))
        clock.advance(seconds=60)


def search_memories(service: Any, rng: random.Random, n: int) -> None:
    for _ in range(n):
        service.search(TENANT, SearchRequest(query=f"what about {rng.choice(TOPICS)}?"))


def ingest_conversations(service: Any, clock: ManualClock, rng: random.Random, n: int) -> None:
    """`n` memory_ingest calls of 20 messages, each its own session, ten minutes apart."""
    for call in range(n):
        messages = [
            {
                "role": "user" if j % 2 == 0 else "assistant",
                "content": f"{rng.choice(TOPICS)} {rng.choice(DETAILS)} ({call}.{j})",
                "timestamp": (clock.now() + timedelta(seconds=j)).isoformat(),
            }
            for j in range(20)
        ]
        request = IngestRequest.model_validate({"messages": messages, "session_id": f"s{call}"})
        service.ingest(TENANT, request)
        clock.advance(seconds=600)


def measure(opensearch_url: str, memories: int, searches: int, ingests: int) -> dict[str, Any]:
    from rearview.service.lifecycle import LifecycleConfig, LifecycleService

    rng = random.Random(5)
    moto = MotoClock()
    out: dict[str, Any] = {}
    with aws_shape(opensearch_url) as (service, meter, checkpoints, clock):

        def phase(name: str, count: int, action: Callable[[], object]) -> None:
            meter.usage = Usage()
            started = time.monotonic()
            with app_cpu(meter.usage, moto):
                action()
            out[name] = {"count": count, **_plain(meter.usage)}
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            print(
                f"  .. {name}: {time.monotonic() - started:.0f} s, peak RSS {rss_mb} MB",
                file=sys.stderr,
                flush=True,
            )

        lifecycle = LifecycleService(service, checkpoints, LifecycleConfig(lookahead=timedelta(hours=36)))

        def jobs(*names: str) -> Callable[[], None]:
            def run() -> None:
                for job in names:
                    report = lifecycle.run(job, TENANT)  # type: ignore[arg-type]
                    out.setdefault("archived", {})[job] = report.archived

            return run

        phase("write", memories, lambda: write_memories(service, clock, rng, memories))
        out["storage"] = storage(meter, service.index, memories)
        phase("search", searches, lambda: search_memories(service, rng, searches))
        phase("ingest", ingests, lambda: ingest_conversations(service, clock, rng, ingests))
        hot = memories + ingests * 20
        phase("lifecycle_first_run", hot, jobs("decay", "archive"))
        phase("lifecycle_idle_run", 1, jobs("decay", "archive"))
        later = max(1, memories // 10)
        write_memories(service, clock, rng, later, first=memories)  # not metered: `write` has them
        clock.advance(hours=1)
        phase("lifecycle_new_writes", later, jobs("decay", "archive"))
        live = service.store.stats(TENANT).by_status.get("active", 0)
        phase("reconcile", max(1, live), jobs("reconcile"))
        clock.advance(days=120)  # importance 3 has faded (100 days), not expired (180)
        phase("lifecycle_decay_due", 1, jobs("decay"))
        out["lifecycle_decay_due"]["count"] = max(1, out["archived"]["decay"])
        clock.advance(days=244)  # importance 4 expires on day 365: within the 36 h look-ahead
        phase("lifecycle_archive_due", 1, jobs("archive"))
        out["lifecycle_archive_due"]["count"] = max(1, out["archived"]["archive"])
    return out


def storage(meter: DynamoDBMeter, index: Any, memories: int) -> dict[str, float]:
    """Bytes per memory: in the table (items plus each GSI entry, 100 bytes of overhead each, as
    DynamoDB bills storage) and in the OpenSearch index (its primary store size over its documents)."""
    from rearview.backends.dynamodb.codec import item_size

    table_bytes = 0
    pages = meter.raw.get_paginator("scan").paginate(TableName=meter.table)  # unmetered: moto only
    for item in (i for page in pages for i in page["Items"]):
        table_bytes += item_size(item) + 100
        for shape in meter.shapes:
            if all(k in item for k in shape.keys):
                keys = {k: item[k] for k in ("pk", "sk", *shape.keys)}
                table_bytes += item_size(item if shape.all_attributes else keys) + 100
    index.client.indices.refresh(index=f"{index.config.alias}-v*")
    stats = index.client.indices.stats(index=f"{index.config.alias}-v*", metric="store,docs")["_all"][
        "primaries"
    ]
    return {
        "dynamodb_bytes_per_memory": table_bytes / memories,
        "opensearch_bytes_per_doc": stats["store"]["size_in_bytes"] / max(1, stats["docs"]["count"]),
        "opensearch_dimension": DIMENSION,
    }


def _plain(usage: Usage) -> dict[str, Any]:
    """`usage` as JSON-ready values (not `asdict`: it rebuilds a Counter from its items' pairs)."""
    return {f.name: _value(getattr(usage, f.name)) for f in fields(usage)}


def _value(value: object) -> object:
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--ingests", type=int, default=5)
    parser.add_argument("--opensearch", help="URL of a running node (default: start the test node)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    load_before = loadavg()
    with ExitStack() as stack:
        url = args.opensearch
        if url is None:
            from tests.engines.opensearch_node import OpenSearchNode

            url = stack.enter_context(OpenSearchNode.start()).url
        ops = measure(url, args.memories, args.searches, args.ingests)
    result = {
        "cpu": cpu_model(),
        "load_before": load_before,
        "load_after": loadavg(),
        "settings": {"memories": args.memories, "searches": args.searches, "ingests": args.ingests},
        "operations": {k: v for k, v in ops.items() if k not in ("archived", "storage")},
        "archived": ops["archived"],
        "storage": ops["storage"],
    }
    print(f"CPU {result['cpu']}; load average before {load_before}, after {result['load_after']}")
    print(f"one tenant of {args.memories} memories written (+ {20 * args.ingests} ingested)")
    print(f"{'operation (per unit)':<24} {'count':>6} {'RRU':>7} {'WRU':>7} {'moto CU':>8} {'S3 req':>7}"
          f" {'OS req':>7} {'OS took':>8} {'embeds':>7} {'CPU ms':>8}")  # fmt: skip
    for name, op in result["operations"].items():
        n = op["count"]
        row = (
            f"{name:<24} {n:>6} {op['rru'] / n:>7.2f} {op['wru'] / n:>7.2f} {op['moto_units'] / n:>8.2f}"
            f" {sum(op['s3_calls'].values()) / n:>7.3f} {sum(op['os_calls'].values()) / n:>7.2f}"
            f" {op['os_took_ms'] / n:>8.2f} {op['embedded_texts'] / n:>7.2f} {1000 * op['cpu_s'] / n:>8.2f}"
        )
        print(row)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
