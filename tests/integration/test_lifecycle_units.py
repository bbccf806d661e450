"""What the lifecycle jobs ask of DynamoDB, metered as `benchmarks/cost/aws_units.py` meters it (moto).

- Scheduling a memory (the decay job moving it in its due order) is a few write units of a small
  item, whatever the memory's size: the memory item, and the listing indexes that copy all of it,
  are not rewritten.
- Reconcile's version check reads the memory items, not their recall items (it needs a
  memory's version and status, never its recall bookkeeping).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from benchmarks.cost.aws_meters import DynamoDBMeter

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.local_archive import DirectoryArchive
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import WriteRequest
from rearview.ports import DueAt, Touch
from rearview.service.lifecycle import LifecycleConfig, LifecycleService
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0
from tests.fixtures.aws import REGION

DIMENSION = 64
FILLER = " Recorded in the weekly notes, with the context of who asked and why it came up at all."
COUNT = 6


def metered_service(
    client: Any, table: str, archive: Path
) -> tuple[MemoryService, DynamoDBMeter, ManualClock]:
    clock = ManualClock(T0)
    store = DynamoDBMemoryStore(table, client, clock=clock)
    index, embedder = InMemoryMemoryIndex(DIMENSION), HashingEmbedder(DIMENSION)
    service = MemoryService(store, index, embedder, clock, archive=DirectoryArchive(archive, clock=clock))
    raw = boto3.client("dynamodb", region_name=REGION)  # the meter's own, unmetered reads
    return service, DynamoDBMeter(client, raw, table), clock


def written_keys(client: Any) -> list[tuple[str, str]]:
    """(operation, sort key) of every item write the client sends from now on."""
    seen: list[tuple[str, str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in ("UpdateItem", "PutItem", "DeleteItem"):
            key = params.get("Key") or params["Item"]
            seen.append((model.name, key["sk"]["S"]))
        elif model.name == "TransactWriteItems":
            for action in params["TransactItems"]:
                ((kind, body),) = action.items()
                seen.append((kind, (body.get("Key") or body["Item"])["sk"]["S"]))

    client.meta.events.register("provide-client-params.dynamodb.*", record)
    return seen


def memory_items(raw: Any, table: str) -> dict[str, Any]:
    pages = raw.get_paginator("scan").paginate(TableName=table)
    return {i["pk"]["S"]: i for page in pages for i in page["Items"] if i["sk"]["S"] == "MEMORY"}


@pytest.mark.parametrize("content_chars", [120, 3_500])
def test_scheduling_a_memory_writes_a_small_item_whatever_its_size(
    dynamodb_client: Any, dynamodb_table: str, tmp_path: Path, content_chars: int
) -> None:
    service, meter, _ = metered_service(dynamodb_client, dynamodb_table, tmp_path)
    ids = [
        service.write("t1", WriteRequest(content=(f"fact {i}:" + FILLER * 60)[:content_chars])).memory.id
        for i in range(COUNT)
    ]
    memories = service.store.get_many("t1", ids)
    before = memory_items(meter.raw, dynamodb_table)
    writes = written_keys(dynamodb_client)
    meter.usage.wru = 0.0
    due = T0 + timedelta(days=30)
    service.store.schedule("t1", [DueAt(m.id, m.version, due, m.expires_at) for m in memories])
    listed = service.store.list_due("t1", "decay", due, limit=50).items
    assert sorted(m.id for m in listed) == sorted(m.id for m in memories)
    assert not service.store.list_due("t1", "decay", due - timedelta(seconds=1), limit=50).items
    assert all(sk != "MEMORY" for _, sk in writes), writes
    assert memory_items(meter.raw, dynamodb_table) == before  # not one attribute of a memory item changed
    # the due item (1 unit) and its keys-only decay entry moved (a delete and a put: 2 units)
    assert meter.usage.wru <= 3 * COUNT, (meter.usage.wru, content_chars)


def test_a_first_lifecycle_run_writes_no_memory_item_it_keeps(
    dynamodb_client: Any, dynamodb_table: str, tmp_path: Path
) -> None:
    service, meter, clock = metered_service(dynamodb_client, dynamodb_table, tmp_path)
    for i in range(COUNT):
        service.write("t1", WriteRequest(content=f"fact {i}:{FILLER * 20}", importance=4))
    clock.advance(days=1)
    lifecycle = LifecycleService(service, InMemoryCheckpointStore(), LifecycleConfig())
    writes = written_keys(dynamodb_client)
    meter.usage.wru = 0.0
    for job in ("decay", "archive"):
        report = lifecycle.run(job, "t1")
        assert report.archived == 0 and report.scheduled == COUNT, report
    assert Counter(sk for _, sk in writes)["MEMORY"] == 0, writes
    assert meter.usage.wru <= 4 * COUNT  # decay moves each (3 units), archive finds it unchanged (1)


def test_reconcile_reads_no_recall_item(dynamodb_client: Any, dynamodb_table: str, tmp_path: Path) -> None:
    service, meter, _ = metered_service(dynamodb_client, dynamodb_table, tmp_path)
    ids = [service.write("t1", WriteRequest(content=f"fact {i}: {FILLER}")).memory.id for i in range(COUNT)]
    service.store.touch("t1", [Touch(m, 1.5, T0 + timedelta(minutes=5), 1) for m in ids])  # recall items
    asked: list[str] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "BatchGetItem":
            asked.extend(k["sk"]["S"] for request in params["RequestItems"].values() for k in request["Keys"])

    dynamodb_client.meta.events.register("provide-client-params.dynamodb.BatchGetItem", record)
    meter.usage.rru = 0.0
    report = LifecycleService(service, InMemoryCheckpointStore(), LifecycleConfig()).run("reconcile", "t1")
    assert report.scanned == COUNT and asked.count("MEMORY") == COUNT, (report, asked)
    assert "RECALL" not in asked
    assert meter.usage.rru <= COUNT + 2  # a read of each small memory item; a checkpoint and a count
