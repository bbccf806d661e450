"""S3 archive on moto (bucket configured from template.yaml), alone and with the DynamoDB store."""

from __future__ import annotations

import gzip
import json
import re
from datetime import timedelta
from typing import Any

import boto3
import pytest

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.backends.s3_archive import S3Archive
from rearview.errors import ArchiveError, InvalidInputError, NotFoundError
from rearview.models import HistoryAction, HistoryEvent, Memory, MemoryStatus
from rearview.ports import StoreWrite
from rearview.shared.clock import ManualClock
from rearview.shared.ids import new_id
from tests.factories import T0, created, make_memory, minutes

pytest.register_assert_rewrite("tests.fixtures.aws")  # it is also a plugin (below): rewrite it first
from tests.fixtures.aws import REGION, FaultInjector, OperationRecorder  # noqa: E402

# moto fixtures (aws_credentials, s3_client, s3_bucket, dynamodb_table, ...).
pytest_plugins = ["tests.fixtures.aws"]

KEY = re.compile(r"^archive/tenant=t1/date=2026-01-01/[0-9A-HJKMNP-TV-Z]{26}\.jsonl\.gz$")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def archive(s3_client: Any, s3_bucket: str, clock: ManualClock) -> S3Archive:
    return S3Archive(s3_bucket, client=s3_client, clock=clock)


def rich_memory(content: str, **kwargs: Any) -> Memory:
    return make_memory(
        content, session_id="s1", tags=["x", "y"], expires_at=T0 + timedelta(days=7), **kwargs
    ).model_copy(
        update={
            "metadata": {"source": "chat", "n": 3, "ratio": 1.0, "ok": True},
            "entities": ["Alice"],
            "confidence": 0.8,
            "strength": 0.42,
            "status": MemoryStatus.ARCHIVED,
        }
    )


def history_of(memory: Memory, *actions: HistoryAction) -> list[HistoryEvent]:
    return [
        HistoryEvent(
            id=new_id(T0 + minutes(i)),
            tenant_id=memory.tenant_id,
            memory_id=memory.id,
            action=action,
            at=T0 + minutes(i),
            before={"content": "old"} if i else None,
            after={"content": memory.content},
            note="why: 理由",
        )
        for i, action in enumerate(actions)
    ]


def test_bucket_is_configured_from_the_template(s3_client: Any, s3_bucket: str):
    encryption = s3_client.get_bucket_encryption(Bucket=s3_bucket)["ServerSideEncryptionConfiguration"]
    assert encryption["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3_client.get_public_access_block(Bucket=s3_bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values()) and len(block) == 4
    rules = s3_client.get_bucket_lifecycle_configuration(Bucket=s3_bucket)["Rules"]
    assert [t["StorageClass"] for t in rules[0]["Transitions"]] == ["GLACIER_IR", "DEEP_ARCHIVE"]


def test_put_get_round_trip_keeps_content_metadata_and_history(archive: S3Archive):
    a, b = rich_memory("User prefers tea — 喜欢茶"), rich_memory("Deploys happen on Fridays")
    ha = history_of(a, HistoryAction.CREATED, HistoryAction.UPDATED, HistoryAction.ARCHIVED)
    hb = history_of(b, HistoryAction.CREATED)
    ref = archive.put("t1", [(a, ha), (b, hb)])
    assert KEY.match(ref), ref
    got_a, got_ha = archive.get("t1", ref, a.id)
    assert got_a == a and got_ha == ha
    assert got_a.metadata == {"source": "chat", "n": 3, "ratio": 1.0, "ok": True}
    assert isinstance(got_a.metadata["ratio"], float) and isinstance(got_a.metadata["n"], int)
    assert archive.get("t1", ref, b.id) == (b, hb)
    assert list(archive.iter_refs("t1")) == [ref]


def test_objects_are_encrypted_gzip_json_lines(archive: S3Archive, s3_client: Any, s3_bucket: str):
    a, b = rich_memory("a"), rich_memory("b")
    ref = archive.put("t1", [(a, history_of(a, HistoryAction.CREATED)), (b, [])])
    head = s3_client.head_object(Bucket=s3_bucket, Key=ref)
    assert head["ServerSideEncryption"] == "AES256"
    assert head["ContentType"] == "application/gzip"
    assert head["Metadata"] == {"format": "rearview-archive-v1", "count": "2"}
    body = s3_client.get_object(Bucket=s3_bucket, Key=ref)["Body"].read()
    lines = gzip.decompress(body).decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["memory"]["id"] for r in records] == [a.id, b.id]
    assert [len(r["history"]) for r in records] == [1, 0] and {r["v"] for r in records} == {1}


def test_kms_key_selects_sse_kms(s3_client: Any, s3_bucket: str, clock: ManualClock):
    key_id = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["KeyId"]
    archive = S3Archive(s3_bucket, prefix="cold", client=s3_client, kms_key_id=key_id, clock=clock)
    m = rich_memory("secret")
    ref = archive.put("t1", [(m, [])])
    assert ref.startswith("cold/tenant=t1/")
    head = s3_client.head_object(Bucket=s3_bucket, Key=ref)
    assert head["ServerSideEncryption"] == "aws:kms" and key_id in head["SSEKMSKeyId"]
    assert archive.get("t1", ref, m.id)[0] == m


def test_delete_rewrites_then_removes_the_object(archive: S3Archive, s3_client: Any, s3_bucket: str):
    a, b = rich_memory("a"), rich_memory("b")
    ref = archive.put("t1", [(a, []), (b, [])])
    archive.delete("t1", ref, a.id)
    with pytest.raises(NotFoundError):
        archive.get("t1", ref, a.id)
    assert archive.get("t1", ref, b.id)[0] == b
    assert s3_client.head_object(Bucket=s3_bucket, Key=ref)["ServerSideEncryption"] == "AES256"
    assert b'"a"' not in gzip.decompress(s3_client.get_object(Bucket=s3_bucket, Key=ref)["Body"].read())
    archive.delete("t1", ref, b.id)
    assert s3_client.list_objects_v2(Bucket=s3_bucket).get("KeyCount") == 0
    archive.delete("t1", ref, b.id)  # idempotent
    with pytest.raises(NotFoundError):
        archive.get("t1", ref, b.id)


def test_concurrent_deletes_from_one_object_both_hold(
    archive: S3Archive, s3_client: Any, s3_bucket: str, clock
):
    a, b, c = rich_memory("a"), rich_memory("b"), rich_memory("c")
    ref = archive.put("t1", [(a, []), (b, []), (c, [])])
    rival = S3Archive(s3_bucket, client=boto3.client("s3", region_name=REGION), clock=clock)
    raced: list[bool] = []

    def rival_deletes_first(**_: Any) -> None:
        if not raced:
            raced.append(True)
            rival.delete("t1", ref, b.id)  # lands between our read and our conditional write

    s3_client.meta.events.register("before-call.s3.PutObject", rival_deletes_first)
    archive.delete("t1", ref, a.id)
    assert raced
    assert archive.get("t1", ref, c.id)[0] == c
    for gone in (a, b):
        with pytest.raises(NotFoundError):
            archive.get("t1", ref, gone.id)


def test_refs_are_per_tenant_and_other_tenants_refs_are_refused(archive: S3Archive):
    mine = archive.put("t1", [(rich_memory("mine"), [])])
    odd_tenant = make_memory("theirs", tenant_id="acme/../t1")
    theirs = archive.put("acme/../t1", [(odd_tenant, [])])
    assert theirs.startswith("archive/tenant=acme%2F..%2Ft1/")
    assert list(archive.iter_refs("t1")) == [mine]
    assert list(archive.iter_refs("acme/../t1")) == [theirs]
    with pytest.raises(NotFoundError):
        archive.get("t1", theirs, odd_tenant.id)
    archive.delete("t1", theirs, odd_tenant.id)  # not t1's object: nothing happens
    assert archive.get("acme/../t1", theirs, odd_tenant.id)[0] == odd_tenant


def test_bad_batches_are_refused(archive: S3Archive):
    with pytest.raises(InvalidInputError):
        archive.put("t1", [])
    with pytest.raises(InvalidInputError):
        archive.put("t2", [(rich_memory("t1's"), [])])
    m = rich_memory("m")
    stray = history_of(rich_memory("other"), HistoryAction.CREATED)
    with pytest.raises(InvalidInputError):
        archive.put("t1", [(m, stray)])


def test_s3_failures_are_archive_errors(
    archive: S3Archive, s3_client: Any, s3_bucket: str, clock: ManualClock
):
    with pytest.raises(NotFoundError):
        archive.get("t1", "archive/tenant=t1/date=2026-01-01/missing.jsonl.gz", "x")
    s3_client.put_object(Bucket=s3_bucket, Key="archive/tenant=t1/junk.jsonl.gz", Body=b"not gzip")
    with pytest.raises(ArchiveError, match="not a readable"):
        archive.get("t1", "archive/tenant=t1/junk.jsonl.gz", "x")
    with pytest.raises(ArchiveError, match="NoSuchBucket"):
        S3Archive("no-such-bucket", client=s3_client, clock=clock).put("t1", [(rich_memory("m"), [])])
    FaultInjector(s3_client, "PutObject", "SlowDown", times=1, status=503)
    with pytest.raises(ArchiveError, match="SlowDown"):
        archive.put("t1", [(rich_memory("m"), [])])


def test_cold_object_requests_a_restore_and_says_so(archive: S3Archive, s3_client: Any):
    m = rich_memory("m")
    ref = archive.put("t1", [(m, [])])
    FaultInjector(s3_client, "GetObject", "InvalidObjectState", times=1, status=403)
    FaultInjector(s3_client, "RestoreObject", "RestoreAlreadyInProgress", times=1, status=409)
    recorder = OperationRecorder(s3_client)
    with pytest.raises(ArchiveError, match="restore was requested"):
        archive.get("t1", ref, m.id)
    assert recorder.operations == ["GetObject", "RestoreObject"]


def test_constructor_does_no_io(aws_credentials: None):
    archive = S3Archive("bucket")
    assert not archive._client.built
    assert archive._client.get().meta.config.retries["mode"] == "standard"


def test_archive_restore_and_hard_forget_through_store_and_bucket(
    archive: S3Archive,
    s3_client: Any,
    s3_bucket: str,
    dynamodb_client: Any,
    dynamodb_table: str,
    clock: ManualClock,
):
    """The adapters' side of archive → restore → hard forget (the service drives the same steps)."""
    store = DynamoDBMemoryStore(dynamodb_table, dynamodb_client, clock=clock)
    m = make_memory("The staging DB password rotates monthly", session_id="ops", tags=["ops"]).model_copy(
        update={"metadata": {"system": "staging", "rotation_days": 30}, "idempotency_key": "k1"}
    )
    store.commit([created(m)])
    # Archive: the body and history go to S3, the store keeps a tombstone pointing at the object.
    clock.advance(days=200)
    ref = archive.put("t1", [(m, store.history("t1", m.id))])
    tombstone = m.model_copy(update={"status": MemoryStatus.ARCHIVED, "archive_ref": ref, "version": 2})
    archived_event = HistoryEvent(
        id=new_id(clock.now()), tenant_id="t1", memory_id=m.id, action=HistoryAction.ARCHIVED, at=clock.now()
    )
    store.commit([StoreWrite(tombstone, archived_event, 1)])
    # Restore: what comes back from S3 is the memory as it was, content and metadata intact.
    restored, history = archive.get("t1", ref, m.id)
    assert restored == m and [e.action for e in history] == [HistoryAction.CREATED]
    back = restored.model_copy(update={"version": 3, "updated_at": clock.now()})
    store.commit([StoreWrite(back, None, 2)])
    assert store.get("t1", m.id) == back
    # Hard forget: nothing left in the table or the bucket.
    archive.delete("t1", ref, m.id)
    store.purge("t1", m.id)
    leftovers = [
        i
        for i in dynamodb_client.scan(TableName=dynamodb_table)["Items"]
        if not i["pk"]["S"].startswith("REGISTRY#")
    ]
    assert leftovers == []
    assert s3_client.list_objects_v2(Bucket=s3_bucket).get("KeyCount") == 0
