"""Lifecycle on the AWS backends (moto): DynamoDB store + S3 archive, table and bucket from template.yaml.

- a TTL REMOVE record of an item moto held (the item deleted as TTL would) goes through the
  stream handler to `on_expired`: archived to S3 with its history, stub in the table, dropped
  from the index; a second delivery changes nothing; the memory restores;
- the `events/stream/ttl-remove.json` payload does the same for a memory the table never held;
- archive → restore → search on DynamoDB + S3.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.memory import InMemoryMemoryIndex
from rearview.backends.memory_checkpoints import InMemoryCheckpointStore
from rearview.backends.s3_archive import S3Archive
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import HistoryAction, MemoryStatus, SearchRequest, WriteRequest
from rearview.service.lifecycle import LifecycleConfig, LifecycleService
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.events import load_event
from tests.factories import T0

pytest.register_assert_rewrite("tests.fixtures.aws")
from tests.fixtures.aws import REGION  # noqa: E402

pytest_plugins = ["tests.fixtures.aws"]

stream = pytest.importorskip("handlers.stream")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def service(
    dynamodb_client: Any, dynamodb_table: str, s3_client: Any, s3_bucket: str, clock: ManualClock
) -> MemoryService:
    return MemoryService(
        DynamoDBMemoryStore(dynamodb_table, dynamodb_client, clock=clock),
        InMemoryMemoryIndex(256),
        HashingEmbedder(256),
        clock,
        archive=S3Archive(s3_bucket, client=s3_client, clock=clock),
    )


def ttl_removal(item: dict[str, Any], key: dict[str, Any]) -> dict[str, Any]:
    """The stream event Lambda receives when DynamoDB's TTL process deletes `item`.

    moto cannot run TTL and does not serve this botocore's DynamoDB Streams protocol, so the
    record is assembled in the stream's shape around the item exactly as the table held it.
    """
    return {
        "Records": [
            {
                "eventID": "1",
                "eventName": "REMOVE",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": REGION,
                "dynamodb": {
                    "ApproximateCreationDateTime": 1767312000,
                    "Keys": key,
                    "OldImage": item,
                    "SequenceNumber": "100000000000000000001",
                    "SizeBytes": 512,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
                "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            }
        ]
    }


def test_a_ttl_remove_record_archives_to_s3_once_and_restores(
    service: MemoryService, dynamodb_client: Any, dynamodb_table: str, clock: ManualClock
) -> None:
    memory = service.write("t1", WriteRequest(content="Door code for the lab is 2718", ttl_days=1)).memory
    clock.advance(days=1, hours=2)
    key = {"pk": {"S": f"T#t1#M#{memory.id}"}, "sk": {"S": "MEMORY"}}
    item = dynamodb_client.get_item(TableName=dynamodb_table, Key=key)["Item"]
    dynamodb_client.delete_item(TableName=dynamodb_table, Key=key)  # what DynamoDB's TTL process does
    event = ttl_removal(item, key)

    assert stream.process(event, lambda: service) == {"batchItemFailures": []}
    stub = service.store.get("t1", memory.id)
    assert stub is not None and stub.status is MemoryStatus.ARCHIVED and stub.expires_at is None
    assert stub.archive_ref is not None and stub.archive_ref.startswith("archive/tenant=t1/date=2026-01-02/")
    assert service.index.count("t1") == 0
    assert stream.process(event, lambda: service) == {"batchItemFailures": []}  # redelivered: no-op
    assert list(service.archive.iter_refs("t1")) == [stub.archive_ref]

    restored = service.restore("t1", memory.id)
    assert restored.memory.content == "Door code for the lab is 2718" and restored.indexed
    actions = [e.action for e in service.history("t1", memory.id).events]
    assert actions == [HistoryAction.CREATED, HistoryAction.ARCHIVED, HistoryAction.RESTORED]
    assert list(service.archive.iter_refs("t1")) == []


def test_the_sample_stream_event_archives_its_old_image(service: MemoryService) -> None:
    event = load_event("stream/ttl-remove")
    assert stream.process(event, lambda: service) == {"batchItemFailures": []}
    old = event["Records"][0]["dynamodb"]["OldImage"]
    memory_id = old["id"]["S"]
    tenant = old["gsi1pk"]["S"].removeprefix("T#")
    stub = service.store.get(tenant, memory_id)
    assert stub is not None and stub.status is MemoryStatus.ARCHIVED
    archived, _ = service.archive.get(tenant, stub.archive_ref or "", memory_id)
    assert archived.content == old["content"]["S"]


def test_archive_restore_search_on_dynamodb_and_s3(service: MemoryService, clock: ManualClock) -> None:
    memory = service.write(
        "t1", WriteRequest(content="Quarterly report is due on the 5th", importance=1)
    ).memory
    clock.advance(days=6, hours=12)
    jobs = LifecycleService(service, InMemoryCheckpointStore(), LifecycleConfig(lookahead=timedelta(days=1)))
    assert jobs.apply_retention("t1").archived == 1
    assert service.search("t1", SearchRequest(query="quarterly report due")).results == []
    restored = service.restore("t1", memory.id)
    assert restored.memory.status is MemoryStatus.ACTIVE
    assert service.search("t1", SearchRequest(query="quarterly report due")).results[0].id == memory.id
