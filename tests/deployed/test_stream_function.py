"""The built stream function behind the template's event source mapping: TTL expiries and the DLQ."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from tests.deployed.conftest import TENANT_A_KEY, Deployment
from tests.deployed.driver import TTL_IDENTITY, matches, wait_for
from tests.mcp_client import blocking_client

pytestmark = [pytest.mark.deployed, pytest.mark.opensearch, pytest.mark.slow]

DAY_S = 86_400


def _search_ids(deployment: Deployment, query: str) -> list[str]:
    with blocking_client(deployment.mcp_url, "2026-07-28", TENANT_A_KEY) as client:
        return [hit["id"] for hit in client.call("memory_search", {"query": query})["results"]]


def test_the_templates_filter_passes_ttl_deletions_only(deployment: Deployment) -> None:
    (pattern,) = deployment.stream.spec.streams[0].filter_patterns
    record: dict[str, Any] = {"eventName": "REMOVE", "dynamodb": {"Keys": {}}}
    assert matches(pattern, {**record, "userIdentity": dict(TTL_IDENTITY)})
    assert not matches(pattern, record)  # an application delete
    assert not matches(pattern, {**record, "userIdentity": {"type": "Service", "principalId": "other"}})
    assert not matches(pattern, {"eventName": "INSERT", "userIdentity": dict(TTL_IDENTITY)})


def test_a_ttl_removal_ends_archived_and_out_of_the_index(deployment: Deployment) -> None:
    deployment.stream_mapping.poll()  # what earlier tests left on the stream
    marker = uuid.uuid4().hex[:8]
    with blocking_client(deployment.mcp_url, "legacy", TENANT_A_KEY) as client:
        written = client.call(
            "memory_write", {"content": f"Hotfix branch {marker} is frozen.", "ttl_days": 1}
        )
    memory_id = written["id"]
    assert wait_for(lambda: memory_id in _search_ids(deployment, f"hotfix branch {marker}"), timeout_s=15)
    swept = deployment.ttl.sweep(at=time.time() + 2 * DAY_S)  # two days later, DynamoDB's TTL deletes it
    key = (f"T#tenant-a#M#{memory_id}", "MEMORY")
    assert key in swept

    report = deployment.stream_mapping.poll()
    assert report.delivered >= 1 and report.dead_lettered == 0
    assert report.filtered_out >= 1  # the write's INSERT/MODIFY records never reach the function

    stub = deployment.dynamodb.get_item(
        TableName=deployment.table, Key={"pk": {"S": key[0]}, "sk": {"S": key[1]}}
    )
    assert stub["Item"]["status"]["S"] == "archived"
    archived = deployment.s3.list_objects_v2(Bucket=deployment.bucket, Prefix="archive/tenant=tenant-a/")
    assert archived.get("KeyCount", 0) >= 1
    assert wait_for(lambda: memory_id not in _search_ids(deployment, f"hotfix branch {marker}"), timeout_s=15)


def test_a_poisoned_record_goes_to_the_dlq_after_the_configured_retries(deployment: Deployment) -> None:
    deployment.stream_mapping.poll()
    deployment.drain("StreamDeadLetterQueue")
    memory_id = "01POISONED" + uuid.uuid4().hex[:16].upper()
    deployment.dynamodb.put_item(  # a memory item no Memory can be read from (no content, no type)
        TableName=deployment.table,
        Item={
            "pk": {"S": f"T#tenant-p#M#{memory_id}"},
            "sk": {"S": "MEMORY"},
            "item_type": {"S": "memory"},
            "id": {"S": memory_id},
            "expires_at": {"N": str(int(time.time()) - 60)},
        },
    )
    assert deployment.ttl.sweep(at=time.time()) == [(f"T#tenant-p#M#{memory_id}", "MEMORY")]

    report = deployment.stream_mapping.poll()
    mapping = deployment.stream.spec.streams[0]
    assert mapping.retry_attempts == 5
    assert report.delivered == 1 and report.dead_lettered == 1
    assert report.invocations == mapping.retry_attempts + 1
    (message,) = deployment.drain("StreamDeadLetterQueue")
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert message["requestContext"]["approximateInvokeCount"] == mapping.retry_attempts + 1
    batch = message["DDBStreamBatchInfo"]
    assert batch["batchSize"] == 1 and batch["streamArn"] == deployment.stream_mapping.stream_arn
    assert "expiring a memory failed" in deployment.stream.log()
