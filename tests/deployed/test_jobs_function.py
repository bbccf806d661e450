"""The built jobs function, fed the template's schedule inputs; failures reach the jobs DLQ."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.deployed.conftest import TENANT_A_KEY, Deployment
from tests.deployed.driver import Scheduler, wait_for
from tests.deployed.rie import BuiltFunction
from tests.mcp_client import blocking_client

pytestmark = [pytest.mark.deployed, pytest.mark.opensearch, pytest.mark.slow]


def _write(deployment: Deployment, content: str, **arguments: Any) -> str:
    with blocking_client(deployment.mcp_url, "2026-07-28", TENANT_A_KEY) as client:
        written = client.call("memory_write", {"content": content, **arguments})
    memory_id: str = written["id"]
    return memory_id


def _item(deployment: Deployment, memory_id: str) -> dict[str, Any]:
    key = {"pk": {"S": f"T#tenant-a#M#{memory_id}"}, "sk": {"S": "MEMORY"}}
    item: dict[str, Any] = deployment.dynamodb.get_item(TableName=deployment.table, Key=key)["Item"]
    return item


def _search_ids(deployment: Deployment, query: str) -> list[str]:
    with blocking_client(deployment.mcp_url, "legacy", TENANT_A_KEY) as client:
        return [hit["id"] for hit in client.call("memory_search", {"query": query})["results"]]


def _tenant_report(outcome_result: dict[str, Any]) -> dict[str, Any]:
    (report,) = [r for r in outcome_result["result"]["reports"] if r["tenant_id"] == "tenant-a"]
    return dict(report)


def _archived_objects(deployment: Deployment) -> list[str]:
    listing = deployment.s3.list_objects_v2(Bucket=deployment.bucket, Prefix="archive/tenant=tenant-a/")
    return [o["Key"] for o in listing.get("Contents", [])]


def test_the_schedules_are_the_templates(deployment: Deployment) -> None:
    assert {name: s.input for name, s in deployment.scheduler.schedules.items()} == {
        "decay": {"job": "decay"},
        "archive": {"job": "archive"},
        "reconcile": {"job": "reconcile"},
        "cues": {"job": "cues"},
    }


def test_decay_archives_a_memory_unused_for_years(deployment: Deployment) -> None:
    memory_id = _write(
        deployment, f"Build cache {uuid.uuid4().hex[:8]} lives on the old NFS share.", importance=1
    )
    three_years_ago = (datetime.now(UTC) - timedelta(days=3 * 365)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    deployment.dynamodb.update_item(  # as if it had not been recalled since
        TableName=deployment.table,
        Key={"pk": {"S": f"T#tenant-a#M#{memory_id}"}, "sk": {"S": "MEMORY"}},
        UpdateExpression="SET last_accessed_at = :t",
        ExpressionAttributeValues={":t": {"S": three_years_ago}},
    )
    outcome = deployment.scheduler.fire("decay")
    assert not outcome.dead_lettered and len(outcome.attempts) == 1
    assert outcome.result["status"] == "complete"
    report = _tenant_report(outcome.result)
    assert report["archived"] >= 1 and report["scanned"] >= 1
    assert _item(deployment, memory_id)["status"]["S"] == "archived"
    assert any(key.endswith(".jsonl.gz") for key in _archived_objects(deployment))


def test_archive_moves_a_memory_whose_ttl_is_due(deployment: Deployment) -> None:
    memory_id = _write(
        deployment,
        f"Temporary VPN {uuid.uuid4().hex[:8]} credentials expire soon.",
        ttl_days=0.04,  # due within the 1.5 h lookahead
    )
    assert "expires_at" in _item(deployment, memory_id)
    outcome = deployment.scheduler.fire("archive")
    assert outcome.result["status"] == "complete"
    report = _tenant_report(outcome.result)
    assert report["expiring"] >= 1 and report["archived"] >= 1
    assert _item(deployment, memory_id)["status"]["S"] == "archived"


def test_reconcile_removes_what_the_store_no_longer_holds(deployment: Deployment) -> None:
    # Drift the way a half-failed delete leaves it: the item is gone from the table (the source of
    # truth), its document is still in the index. (Dropping a *document* instead would not do: the
    # engine refuses to re-index a deleted document's version for index.gc_deletes, 60 s.)
    marker = uuid.uuid4().hex[:8]
    memory_id = _write(deployment, f"The canary fleet {marker} runs in eu-west-1.")
    assert wait_for(lambda: memory_id in _search_ids(deployment, f"canary fleet {marker}"), timeout_s=15)
    deployment.dynamodb.delete_item(
        TableName=deployment.table, Key={"pk": {"S": f"T#tenant-a#M#{memory_id}"}, "sk": {"S": "MEMORY"}}
    )
    outcome = deployment.scheduler.fire("reconcile")
    assert outcome.result["status"] == "complete"
    assert _tenant_report(outcome.result)["orphans_removed"] >= 1
    assert wait_for(lambda: memory_id not in _search_ids(deployment, f"canary fleet {marker}"), timeout_s=15)


def test_a_malformed_job_is_retried_then_dead_lettered(deployment: Deployment) -> None:
    deployment.drain("JobsDeadLetterQueue")
    outcome = deployment.scheduler.invoke_async({"job": "compact"})
    spec = deployment.jobs.spec
    assert len(outcome.attempts) == spec.async_retry_attempts + 1 == 3  # EventInvokeConfig: 2 retries
    assert all(a.error_type == "ValidationError" for a in outcome.attempts)
    (record,) = deployment.drain("JobsDeadLetterQueue")
    assert record["requestPayload"] == {"job": "compact"}
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["responsePayload"]["errorType"] == "ValidationError"


def test_a_schedule_that_cannot_reach_the_function_goes_to_its_dlq(
    deployment: Deployment, tmp_path: Path
) -> None:
    jobs = BuiltFunction.start(
        deployment.jobs.spec,
        code_dir=deployment.build.code_dir("JobsFunction"),
        layer_dir=deployment.build.layer_dir,
        runtime_dir=deployment.tools.runtime_dir,
        python=deployment.tools.python313,
        emulator=deployment.tools.emulator,
        aws_endpoint=deployment.aws_endpoint,
        log_path=tmp_path / "jobs.log",
    )
    jobs.stop()  # gone: every delivery is refused
    deployment.drain("JobsDeadLetterQueue")
    outcome = Scheduler(jobs, deployment.sqs).fire("decay")
    schedule = deployment.scheduler.schedules["decay"]
    assert outcome.dead_lettered and not outcome.attempts
    assert outcome.deliveries == schedule.retry_attempts + 1 == 4  # RetryPolicy: 3 retries
    got = deployment.sqs.receive_message(
        QueueUrl=deployment.queue_url("JobsDeadLetterQueue"), MessageAttributeNames=["All"]
    )
    (message,) = got["Messages"]
    assert json.loads(message["Body"]) == {"job": "decay"}
    assert message["MessageAttributes"]["SCHEDULE_ARN"]["StringValue"].endswith(schedule.name)
