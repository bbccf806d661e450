"""What a search writes to DynamoDB, metered as `benchmarks/cost/aws_units.py` meters it (moto).

A search reinforces the relevant memories it returns (strength, last recall, recall count). That
bookkeeping must cost a small, fixed number of write units per memory recalled, whatever the
memory's size: one standard write of a small item that no index copies, never a rewrite of the
memory item and its index entries.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest
from benchmarks.cost.aws_meters import DynamoDBMeter

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import SearchRequest, WriteRequest
from rearview.ports import Touch
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0
from tests.fixtures.aws import REGION

DIMENSION = 64
FILLER = " Recorded in the weekly notes, with the context of who asked and why it came up at all."


def metered_service(client: Any, table: str) -> tuple[MemoryService, DynamoDBMeter, ManualClock]:
    clock = ManualClock(T0)
    store = DynamoDBMemoryStore(table, client, clock=clock)
    service = MemoryService(store, InMemoryMemoryIndex(DIMENSION), HashingEmbedder(DIMENSION), clock)
    raw = boto3.client("dynamodb", region_name=REGION)  # the meter's own, unmetered reads
    return service, DynamoDBMeter(client, raw, table), clock


@pytest.mark.parametrize("content_chars", [120, 3_500])
def test_a_search_writes_one_unit_per_memory_it_reinforces(
    dynamodb_client: Any, dynamodb_table: str, content_chars: int
) -> None:
    service, meter, clock = metered_service(dynamodb_client, dynamodb_table)
    for topic in ("the staging database", "the deploy pipeline", "the backup schedule"):
        text = f"{topic} was moved to eu-west-1 after the outage."
        service.write("t1", WriteRequest(content=(text + FILLER * 60)[:content_chars]))
    clock.advance(hours=1)
    for _ in range(2):  # the first recall of each memory, then a later one
        clock.advance(minutes=5)
        meter.usage.wru = 0.0
        result = service.search("t1", SearchRequest(query="where is the staging database now?"))
        reinforced = [h for h in result.results if h.last_accessed_at == clock.now()]
        assert reinforced, "the search reinforced nothing: nothing to measure"
        assert meter.usage.wru == len(reinforced), (meter.usage.wru, len(reinforced), content_chars)


def test_the_meter_charges_every_key_a_batch_get_asks_for(dynamodb_client: Any, dynamodb_table: str) -> None:
    """As DynamoDB bills it: a missing item still costs a read, a projected one its whole size."""
    raw = boto3.client("dynamodb", region_name=REGION)
    meter = DynamoDBMeter(dynamodb_client, raw, dynamodb_table)
    big = {"pk": {"S": "T#t1#M#big"}, "sk": {"S": "MEMORY"}, "content": {"S": "x" * 5_000}}
    raw.put_item(TableName=dynamodb_table, Item=big)
    keys = [{"pk": big["pk"], "sk": big["sk"]}, {"pk": {"S": "T#t1#M#gone"}, "sk": {"S": "MEMORY"}}]
    request = {"Keys": keys, "ConsistentRead": True, "ProjectionExpression": "pk"}
    dynamodb_client.batch_get_item(RequestItems={dynamodb_table: request})
    assert meter.usage.rru == 2 + 1  # 5 KB: two units of 4 KB; the missing item: the minimum


def test_touching_many_memories_at_once_writes_one_unit_each(
    dynamodb_client: Any, dynamodb_table: str
) -> None:
    service, meter, _ = metered_service(dynamodb_client, dynamodb_table)
    ids = [service.write("t1", WriteRequest(content=f"fact {i}: {FILLER * 40}")).memory.id for i in range(12)]
    meter.usage.wru = 0.0
    touches = [Touch(memory_id, 1.5, T0 + timedelta(minutes=5), 1) for memory_id in ids]
    service.store.touch("t1", touches)  # more than one thread's worth, sent side by side
    assert meter.usage.wru == len(ids)
    assert {m.strength for m in service.store.get_many("t1", ids)} == {1.5}
