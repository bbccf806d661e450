"""DynamoDB store on moto (table built from template.yaml) and on botocore's Stubber.

The behaviour every store shares is in `tests/contract/`; this module covers what is specific
to DynamoDB: the schema, no Scan, TTL attributes, transactions, throttling, item limits.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from rearview.backends.dynamodb import (
    MAX_TRANSACTION_ITEMS,
    DynamoDBMemoryStore,
    RetryPolicy,
    is_memory_item,
    memory_from_item,
    memory_to_item,
    table_definition,
)
from rearview.backends.dynamodb.codec import item_size
from rearview.errors import ConflictError, InvalidInputError, StoreError
from rearview.models import (
    SERVICE_CUE_AUTHOR,
    Cue,
    HistoryAction,
    HistoryEvent,
    Memory,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    Visibility,
)
from rearview.ports import MAX_WRITES_PER_COMMIT, DueAt, StoreWrite, Touch
from rearview.shared.clock import ManualClock
from rearview.testing import RecordingSleep
from rearview.text import content_hash
from tests.factories import T0, created, make_memory, minutes

pytest.register_assert_rewrite("tests.fixtures.aws")  # it is also a plugin (below): rewrite it first
from tests.fixtures.aws import (  # noqa: E402
    REGION,
    FaultInjector,
    OperationRecorder,
    create_table_kwargs,
    resource_properties,
)

# moto fixtures (aws_credentials, dynamodb_client, dynamodb_table, ...); registering twice is harmless.
pytest_plugins = ["tests.fixtures.aws"]

REQUEST_PATH_OPERATIONS = {
    "GetItem",
    "BatchGetItem",
    "Query",
    "TransactWriteItems",
    "BatchWriteItem",
    "DeleteItem",
    "UpdateItem",  # a recall's touch of its small recall item
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def store(
    dynamodb_client: Any, dynamodb_table: str, clock: ManualClock, sleeps: RecordingSleep
) -> DynamoDBMemoryStore:
    return DynamoDBMemoryStore(
        dynamodb_table, dynamodb_client, clock=clock, retry=RetryPolicy(max_attempts=4, sleep=sleeps)
    )


def all_items(client: Any, table: str) -> list[dict[str, Any]]:
    """Every item of the table: a Scan, allowed here because this is test code, not a request path."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table}
    while True:
        out = client.scan(**kwargs)
        items += out["Items"]
        if "LastEvaluatedKey" not in out:
            return items
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def memory_items(client: Any, table: str) -> list[dict[str, Any]]:
    return [i for i in all_items(client, table) if not i["pk"]["S"].startswith("REGISTRY#")]


def event(memory: Memory, action: HistoryAction, minute: int) -> HistoryEvent:
    return HistoryEvent(
        id=f"01EVENT{minute:019d}",
        tenant_id=memory.tenant_id,
        memory_id=memory.id,
        action=action,
        at=T0 + minutes(minute),
    )


def revised(memory: Memory, minute: int, **changes: Any) -> Memory:
    update = {"version": memory.version + 1, "updated_at": T0 + minutes(minute), **changes}
    if "content" in changes:
        update["content_hash"] = content_hash(changes["content"])
    return memory.model_copy(update=update)


# --------------------------------------------------------------------------- schema


def test_moto_table_is_built_from_template_with_ttl_stream_and_pitr(
    dynamodb_client: Any, dynamodb_table: str
):
    table = dynamodb_client.describe_table(TableName=dynamodb_table)["Table"]
    assert dynamodb_table == "rearview-test-memories"  # from !Sub "${AWS::StackName}-memories"
    assert {g["IndexName"] for g in table["GlobalSecondaryIndexes"]} == {
        "gsi1_tenant_updated", "gsi2_session_updated", "gsi3_type_status_updated",
        "gsi4_due_archive", "gsi5_due_decay",
    }  # fmt: skip
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    ttl = dynamodb_client.describe_time_to_live(TableName=dynamodb_table)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expires_at")
    backups = dynamodb_client.describe_continuous_backups(TableName=dynamodb_table)
    pitr = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert pitr["PointInTimeRecoveryStatus"] == "ENABLED"


def test_code_table_definition_equals_the_template():
    def canonical(kwargs: dict[str, Any]) -> dict[str, Any]:
        out = dict(kwargs)
        out["AttributeDefinitions"] = sorted(out["AttributeDefinitions"], key=lambda a: a["AttributeName"])
        out["GlobalSecondaryIndexes"] = sorted(out["GlobalSecondaryIndexes"], key=lambda g: g["IndexName"])
        return out

    from_template = create_table_kwargs(resource_properties("MemoryTable"), table_name="t")
    assert canonical(dict(table_definition("t"))) == canonical(from_template)


def test_ensure_schema_creates_the_table_once_and_checks_indexes(dynamodb_client: Any):
    store = DynamoDBMemoryStore("fresh", dynamodb_client)
    store.ensure_schema()
    store.ensure_schema()  # idempotent
    assert dynamodb_client.describe_table(TableName="fresh")["Table"]["TableStatus"] == "ACTIVE"
    ttl = dynamodb_client.describe_time_to_live(TableName="fresh")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"
    dynamodb_client.create_table(
        TableName="bare",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    with pytest.raises(StoreError, match="lacks indexes"):
        DynamoDBMemoryStore("bare", dynamodb_client).ensure_schema()


def test_constructor_does_no_io_and_module_import_does_not_load_boto3(aws_credentials: None):
    store = DynamoDBMemoryStore("never-touched")
    assert not store._table._client.built  # nothing created, nothing sent
    code = (
        "import sys; import rearview.backends.dynamodb, rearview.backends.s3_archive, "
        "rearview.embedders.bedrock; print('boto3' in sys.modules, 'botocore' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_lazily_created_client_uses_standard_retries(aws_credentials: None):
    client = DynamoDBMemoryStore("t")._table.client
    assert client.meta.config.retries["mode"] == "standard"


# --------------------------------------------------------------------------- items


def test_item_round_trip_keeps_every_field_exactly():
    m = make_memory(
        "Ünïcode — 记忆 #1",
        session_id="s#1",
        tags=["a", "b"],
        expires_at=T0 + timedelta(days=3, microseconds=7),
    )
    m = m.model_copy(
        update={
            "metadata": {"k": "v", "n": 2, "f": 1.0, "tiny": 1e-7, "b": False},
            "entities": ["Bob"],
            "derived_from": ["x"],
            "superseded_by": "y",
            "idempotency_key": "k#1",
            "archive_ref": "archive/tenant=t1/x.jsonl.gz",
            "confidence": 0.123456789,
            "strength": 1.7,
        }
    )
    item = memory_to_item(m)
    back = memory_from_item(item)
    assert back == m and is_memory_item(item)
    assert back.metadata["f"] == 1.0 and isinstance(back.metadata["f"], float)
    assert item["expires_at"] == {"N": str(int((T0 + timedelta(days=3)).timestamp()) + 1)}  # TTL rounds up


def test_recall_cues_are_one_json_attribute_and_round_trip():
    cues = [Cue(text="Ana's morning drink?", by="planner"), Cue(text='お茶 "sencha"', by=SERVICE_CUE_AUTHOR)]
    m = make_memory("Ana drinks green tea").model_copy(update={"cues": cues})
    item = memory_to_item(m)
    assert set(item["cues"]) == {"S"}  # JSON, like `metadata`: a list of {"by", "text"}
    back = memory_from_item(item)
    assert back == m and back.cues == cues
    assert "cues" not in memory_to_item(m.model_copy(update={"cues": []}))  # none: no attribute


def test_item_written_before_cues_existed_reads_as_no_cues(store: DynamoDBMemoryStore, dynamodb_client: Any):
    m = make_memory("written by an older release")
    item = memory_to_item(m)
    item.pop("cues", None)
    assert memory_from_item(item).cues == []
    dynamodb_client.put_item(TableName=store.table_name, Item=item)  # as an older release left it
    got = store.get("t1", m.id)
    assert got == m and got is not None and got.cues == []
    with_cues = revised(m, 1, cues=[Cue(text="which release wrote it?", by="upgrader")])
    store.commit([StoreWrite(with_cues, event(with_cues, HistoryAction.UPDATED, 1), m.version)])
    assert store.get("t1", m.id) == with_cues


def test_key_parts_are_escaped_so_tenants_cannot_collide(store: DynamoDBMemoryStore):
    a = make_memory("a", tenant_id="acme", memory_id="M#X")
    b = make_memory("b", tenant_id="acme#M", memory_id="X")
    store.commit([created(a), created(b)])
    assert store.get("acme", "M#X") == a
    assert store.get("acme#M", "X") == b
    assert store.get("acme", "X") is None


# --------------------------------------------------------------------------- no Scan


def test_request_paths_issue_no_scan(store: DynamoDBMemoryStore, dynamodb_client: Any, clock: ManualClock):
    recorder = OperationRecorder(dynamodb_client)
    memories = [
        make_memory(
            f"m{i}", session_id="s1" if i % 2 else None, type=list(MemoryType)[i % 4], at=T0 + minutes(i)
        )
        for i in range(12)
    ]
    store.commit([created(m) for m in memories])
    first = memories[0]
    store.commit(
        [StoreWrite(revised(first, 30, content="changed"), event(first, HistoryAction.UPDATED, 30), 1)]
    )
    store.get("t1", first.id)
    store.get_many("t1", [m.id for m in memories])
    store.find_by_hash("t1", first.scope_key, first.content_hash)
    store.find_by_idempotency_key("t1", "nope")
    store.find_by_idempotency_keys("t1", ["nope", "idem-1"])
    for flt in (
        MemoryFilter(),
        MemoryFilter(session_id="s1"),
        MemoryFilter(types=(MemoryType.EPISODIC,), tags=("x",)),
        MemoryFilter(statuses=tuple(MemoryStatus)),
        MemoryFilter(agent_id="a", time_from=T0, time_to=T0 + minutes(5), scope_key="s"),
    ):
        page = store.list_memories("t1", flt, limit=3)
        if page.cursor:
            store.list_memories("t1", flt, cursor=page.cursor, limit=3)
    store.history("t1", first.id)
    store.touch("t1", [Touch(first.id, 1.2, clock.now(), 1)])
    store.stats("t1")
    store.tenants()
    store.purge("t1", first.id)
    assert "Scan" not in recorder.operations
    assert set(recorder.operations) <= REQUEST_PATH_OPERATIONS
    recorder.close()


# --------------------------------------------------------------------------- TTL


def test_expired_item_still_stored_reads_as_absent(store: DynamoDBMemoryStore, dynamodb_client: Any, clock):
    m = make_memory(expires_at=T0 + minutes(10)).model_copy(update={"idempotency_key": "idem"})
    keep = make_memory("kept")
    store.commit([created(m), created(keep)])
    clock.advance(minutes=10)  # exactly at expires_at: expired (Memory.is_expired uses <=)
    item = memory_to_item(m)
    raw = dynamodb_client.get_item(TableName=store.table_name, Key={"pk": item["pk"], "sk": item["sk"]})
    assert "Item" in raw  # DynamoDB deletes lazily: the item is still there...
    assert raw["Item"]["expires_at"]["N"] == str(int((T0 + minutes(10)).timestamp()))
    assert store.get("t1", m.id) is None  # ...but no read returns it
    assert store.get_many("t1", [m.id, keep.id]) == [keep]
    assert store.find_by_hash("t1", m.scope_key, m.content_hash) is None
    assert store.find_by_idempotency_key("t1", "idem") is None
    assert [x.id for x in store.list_memories("t1", MemoryFilter()).items] == [keep.id]
    assert [x.id for x in store.list_memories("t1", MemoryFilter(statuses=tuple(MemoryStatus))).items] == [
        keep.id
    ]
    assert store.stats("t1").total == 1


def test_expired_owner_releases_its_idempotency_key(store: DynamoDBMemoryStore, clock: ManualClock):
    old = make_memory("old", expires_at=T0 + minutes(1)).model_copy(update={"idempotency_key": "k"})
    store.commit([created(old)])
    clash = make_memory("clash").model_copy(update={"idempotency_key": "k"})
    with pytest.raises(ConflictError):
        store.commit([created(clash)])
    clock.advance(minutes=2)
    store.commit([created(clash)])
    assert store.find_by_idempotency_key("t1", "k") == clash


# --------------------------------------------------------------------------- concurrency


def test_stale_version_is_a_conflict_naming_both_versions(store: DynamoDBMemoryStore):
    m = make_memory()
    store.commit([created(m)])
    store.commit([StoreWrite(revised(m, 1, content="v2"), None, 1)])
    with pytest.raises(ConflictError) as info:
        store.commit([StoreWrite(revised(m, 2, content="v2 again"), None, 1)])
    assert (info.value.memory_id, info.value.expected, info.value.actual) == (m.id, 1, 2)


def test_insert_over_existing_fails_inside_the_transaction(store: DynamoDBMemoryStore, dynamodb_client: Any):
    m = make_memory()
    store.commit([created(m)])
    recorder = OperationRecorder(dynamodb_client)
    with pytest.raises(ConflictError) as info:
        store.commit([created(make_memory("other")), created(m)])
    assert recorder.operations == ["TransactWriteItems"]  # refused by the condition, not a pre-check
    assert (info.value.memory_id, info.value.expected, info.value.actual) == (m.id, None, 1)
    assert len(store.list_memories("t1", MemoryFilter()).items) == 1  # the other insert did not land


def test_concurrent_update_between_read_and_transaction_is_a_conflict(
    store: DynamoDBMemoryStore, dynamodb_client: Any, dynamodb_table: str, clock: ManualClock
):
    m = make_memory()
    store.commit([created(m)])
    rival = DynamoDBMemoryStore(dynamodb_table, boto3.client("dynamodb", region_name=REGION), clock=clock)
    raced = []

    def rival_writes_first(**_: Any) -> None:
        if not raced:
            raced.append(True)
            rival.commit([StoreWrite(revised(m, 1, content="rival"), None, 1)])

    dynamodb_client.meta.events.register("before-call.dynamodb.TransactWriteItems", rival_writes_first)
    with pytest.raises(ConflictError) as info:
        store.commit([StoreWrite(revised(m, 2, content="mine"), None, 1)])
    assert (info.value.expected, info.value.actual) == (1, 2)
    got = store.get("t1", m.id)
    assert got is not None and got.content == "rival"


# --------------------------------------------------------------------------- listing


def test_list_pages_are_full_until_exhausted_for_every_index(store: DynamoDBMemoryStore):
    rows = [
        make_memory(
            f"memory {i}",
            type=list(MemoryType)[i % 4],
            agent_id=f"agent{i % 3}",
            visibility=Visibility.PRIVATE if i % 2 else Visibility.SHARED,
            session_id=f"s{i % 3}",
            tags=["x"] if i % 3 == 0 else [],
            status=MemoryStatus.SUPERSEDED if i % 5 == 0 else MemoryStatus.ACTIVE,
            at=T0 + minutes(i // 2),  # pairs share updated_at: ties broken by id, like the reference
        )
        for i in range(60)
    ]
    for start in range(0, len(rows), 20):
        store.commit([created(m) for m in rows[start : start + 20]])
    filters = [
        MemoryFilter(),  # gsi3: four (type, active) partitions merged
        MemoryFilter(statuses=tuple(MemoryStatus)),  # gsi1
        MemoryFilter(session_id="s1", agent_id="agent2"),  # gsi2
        MemoryFilter(types=(MemoryType.WORKING,), statuses=(MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)),
        MemoryFilter(tags=("x",), statuses=(MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)),  # gsi1 + filter
    ]
    for flt in filters:
        expected = [
            m.id for m in sorted(rows, key=lambda m: (m.updated_at, m.id), reverse=True) if flt.matches(m)
        ]
        for limit in (1, 7) if flt.session_id else (4, 9):
            got, cursor, sizes = [], None, []
            while True:
                page = store.list_memories("t1", flt, cursor=cursor, limit=limit)
                got += [m.id for m in page.items]
                sizes.append(len(page.items))
                cursor = page.cursor
                if cursor is None:
                    break
            assert got == expected, (flt, limit)
            assert all(size == limit for size in sizes[:-1]) and 0 < sizes[-1] <= limit, (flt, limit, sizes)


def test_list_rejects_a_forged_cursor_and_bad_limit(store: DynamoDBMemoryStore):
    with pytest.raises(InvalidInputError) as info:
        store.list_memories("t1", MemoryFilter(), cursor="not-a-cursor")
    assert info.value.field == "cursor"
    with pytest.raises(InvalidInputError):
        store.list_memories("t1", MemoryFilter(), limit=0)
    assert store.list_memories("t1", MemoryFilter(statuses=())).items == []


# --------------------------------------------------------------------------- lookups & purge


def test_hash_lookup_follows_content_and_status(store: DynamoDBMemoryStore, dynamodb_client: Any):
    m = make_memory("tea")
    store.commit([created(m)])
    v2 = revised(m, 1, content="coffee")
    store.commit([StoreWrite(v2, event(m, HistoryAction.UPDATED, 1), 1)])
    assert store.find_by_hash("t1", m.scope_key, content_hash("tea")) is None
    assert store.find_by_hash("t1", m.scope_key, content_hash("coffee")) == v2
    v3 = revised(v2, 2, status=MemoryStatus.SUPERSEDED)
    store.commit([StoreWrite(v3, event(m, HistoryAction.SUPERSEDED, 2), 2)])
    assert store.find_by_hash("t1", m.scope_key, content_hash("coffee")) is None
    lookups = [
        i for i in all_items(dynamodb_client, store.table_name) if i.get("item_type") == {"S": "hash_lookup"}
    ]
    assert lookups == []  # exactly one lookup per active memory, none left behind


def test_purge_leaves_nothing_in_the_table(store: DynamoDBMemoryStore, dynamodb_client: Any):
    m = make_memory("tea", session_id="s").model_copy(update={"idempotency_key": "k"})
    other = make_memory("other")
    store.commit([created(m), created(other)])
    v2 = revised(m, 1, content="coffee")
    store.commit([StoreWrite(v2, event(m, HistoryAction.UPDATED, 1), 1)])
    assert len(store.history("t1", m.id)) == 2
    store.purge("t1", m.id)
    store.purge("t1", m.id)
    remaining = [i["pk"]["S"] + " " + i["sk"]["S"] for i in memory_items(dynamodb_client, store.table_name)]
    assert len(remaining) == 4 and all(other.id in key for key in remaining), (
        remaining
    )  # memory, event, lookup, due item
    assert store.get("t1", other.id) == other


def test_touch_skips_missing_memories_without_creating_items(
    store: DynamoDBMemoryStore, dynamodb_client: Any
):
    m = make_memory()
    store.commit([created(m)])
    store.touch("t1", [Touch("ghost", 1.0, T0, 1), Touch(m.id, 1.5, T0 + minutes(3), 2)])
    got = store.get("t1", m.id)
    assert got is not None and (got.strength, got.access_count, got.version) == (1.5, 2, 1)
    kinds = sorted(i["item_type"]["S"] for i in memory_items(dynamodb_client, store.table_name))
    assert kinds == ["due", "hash_lookup", "history_event", "memory", "recall"]  # nothing of the ghost


def test_a_touch_writes_only_a_small_recall_item(store: DynamoDBMemoryStore, dynamodb_client: Any):
    m = make_memory("tea " * 900)
    store.commit([created(m)])
    before = {i["sk"]["S"]: i for i in memory_items(dynamodb_client, store.table_name)}
    store.touch("t1", [Touch(m.id, 1.5, T0 + minutes(3), 1)])
    after = {i["sk"]["S"]: i for i in memory_items(dynamodb_client, store.table_name)}
    assert {k: v for k, v in after.items() if k != "RECALL"} == before  # the memory item is untouched
    assert set(after["RECALL"]) == {"pk", "sk", "item_type", "strength", "last_accessed_at", "access_count"}
    assert item_size(after["RECALL"]) < 1024 and not any(k.startswith("gsi") for k in after["RECALL"])


def test_a_recall_racing_a_purge_leaves_nothing(
    store: DynamoDBMemoryStore, dynamodb_client: Any, dynamodb_table: str
):
    m = make_memory()
    store.commit([created(m)])
    store.touch("t1", [Touch(m.id, 1.2, T0 + minutes(1), 1)])
    searcher = DynamoDBMemoryStore(dynamodb_table, boto3.client("dynamodb", region_name=REGION))
    raced: list[str] = []

    def recall_midway(params: dict[str, Any], **_: Any) -> None:
        requests = params["RequestItems"][dynamodb_table]
        deleted = [r["DeleteRequest"]["Key"]["sk"]["S"] for r in requests if "DeleteRequest" in r]
        if deleted == ["MEMORY"] and not raced:  # its recall item is gone, the memory item not yet
            raced.append(m.id)
            searcher.touch("t1", [Touch(m.id, 1.5, T0 + minutes(2), 2)])  # a search that read it before

    dynamodb_client.meta.events.register("provide-client-params.dynamodb.BatchWriteItem", recall_midway)
    store.purge("t1", m.id)
    searcher.touch("t1", [Touch(m.id, 1.7, T0 + minutes(3), 3)])  # and one that lands after the purge
    assert raced == [m.id]
    assert memory_items(dynamodb_client, store.table_name) == []


def test_a_memory_item_from_before_recall_items_reads_as_stored(
    store: DynamoDBMemoryStore, dynamodb_client: Any, dynamodb_table: str
):
    """Old tables: a recall was written on the memory item itself, and there is no recall item."""
    m = make_memory().model_copy(
        update={"strength": 1.4, "last_accessed_at": T0 + minutes(60), "access_count": 3}
    )
    store.commit([created(make_memory("registers the tenant"))])
    dynamodb_client.put_item(TableName=dynamodb_table, Item=memory_to_item(m))  # as an old touch left it
    assert store.get("t1", m.id) == m
    assert store.get_many("t1", [m.id]) == [m]
    assert m in store.list_memories("t1", MemoryFilter()).items
    store.touch("t1", [Touch(m.id, 0.5, T0 + minutes(30), 4)])  # older than the recall it holds
    assert store.get("t1", m.id) == m
    store.touch("t1", [Touch(m.id, 1.6, T0 + minutes(90), 4)])
    got = store.get("t1", m.id)
    assert got is not None and (got.strength, got.last_accessed_at, got.access_count) == (
        1.6,
        T0 + minutes(90),
        4,
    )


def test_tenants_come_from_the_registry(
    dynamodb_client: Any, dynamodb_table: str, store: DynamoDBMemoryStore
):
    store.commit([created(make_memory(tenant_id="b")), created(make_memory(tenant_id="a"))])
    store.commit([created(make_memory("again", tenant_id="a"))])
    fresh = DynamoDBMemoryStore(dynamodb_table, dynamodb_client)  # another process: empty cache
    assert fresh.tenants() == ["a", "b"]


def test_get_many_reads_more_than_one_batch(store: DynamoDBMemoryStore):
    rows = [make_memory(f"m{i}") for i in range(130)]
    for start in range(0, len(rows), MAX_WRITES_PER_COMMIT):
        store.commit([created(m) for m in rows[start : start + MAX_WRITES_PER_COMMIT]])
    got = store.get_many("t1", [m.id for m in rows] + ["missing", rows[0].id])
    assert sorted(m.id for m in got) == sorted(m.id for m in rows)


# --------------------------------------------------------------------------- limits


def test_over_long_item_is_refused_before_sending(store: DynamoDBMemoryStore, dynamodb_client: Any):
    huge = make_memory("x" * 420_000)
    recorder = OperationRecorder(dynamodb_client)
    with pytest.raises(InvalidInputError) as info:
        store.commit([created(make_memory("fine")), created(huge)])
    assert info.value.field == "memory"
    assert "limit is 409600 bytes" in str(info.value) and "420000 characters" in str(info.value)
    wordy = event(make_memory("small"), HistoryAction.UPDATED, 1).model_copy(update={"note": "n" * 420_000})
    with pytest.raises(InvalidInputError) as info:
        store.commit([StoreWrite(make_memory("small", memory_id=wordy.memory_id), wordy, None)])
    assert info.value.field == "event"
    assert recorder.operations == []
    assert memory_items(dynamodb_client, store.table_name) == []


def test_commit_larger_than_one_transaction_is_refused_not_split(
    store: DynamoDBMemoryStore, dynamodb_client: Any
):
    rows = [make_memory(f"m{i}") for i in range(40)]  # 40 x (memory + event + lookup) > 100 actions
    with pytest.raises(InvalidInputError) as info:
        store.commit([created(m) for m in rows])
    assert info.value.field == "writes" and str(MAX_TRANSACTION_ITEMS) in str(info.value)
    assert memory_items(dynamodb_client, store.table_name) == []


def test_same_memory_twice_in_one_commit_is_refused(store: DynamoDBMemoryStore):
    m = make_memory()
    with pytest.raises(InvalidInputError):
        store.commit([created(m), created(m)])


# --------------------------------------------------------------------------- throttling (moto)


def test_throttled_transaction_retries_then_lands(store: DynamoDBMemoryStore, dynamodb_client: Any, sleeps):
    FaultInjector(dynamodb_client, "TransactWriteItems", "ProvisionedThroughputExceededException", times=2)
    m = make_memory()
    store.commit([created(m)])
    assert store.get("t1", m.id) == m
    assert len(sleeps.delays) == 2 and all(0 <= d <= 2.0 for d in sleeps.delays)


def test_throttling_past_the_bound_is_a_store_error_and_nothing_is_written(
    store: DynamoDBMemoryStore, dynamodb_client: Any, sleeps: RecordingSleep
):
    m = make_memory()
    store.commit([created(m)])
    faults = FaultInjector(
        dynamodb_client,
        "TransactWriteItems",
        "TransactionCanceledException",
        times=10,
        extra={"CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}, {"Code": "None"}]},
    )
    with pytest.raises(StoreError, match="TransactionCanceledException"):
        store.commit([StoreWrite(revised(m, 1, content="new"), event(m, HistoryAction.UPDATED, 1), 1)])
    assert faults.injected == 4 and len(sleeps.delays) == 3  # max_attempts=4, no sleep after the last
    assert store.get("t1", m.id) == m
    assert [e.action for e in store.history("t1", m.id)] == [HistoryAction.CREATED]


# --------------------------------------------------------------------------- throttling (Stubber)


@pytest.fixture
def stubbed(
    aws_credentials: None, clock: ManualClock, sleeps: RecordingSleep
) -> tuple[DynamoDBMemoryStore, Stubber]:
    client = boto3.client("dynamodb", region_name=REGION)
    stubber = Stubber(client)
    store = DynamoDBMemoryStore("tbl", client, clock=clock, retry=RetryPolicy(max_attempts=3, sleep=sleeps))
    return store, stubber


def test_stubber_transaction_conflict_is_retried_with_the_same_token(stubbed):
    store, stubber = stubbed
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}]},
    )
    stubber.add_client_error(
        "transact_write_items", service_error_code="ThrottlingException", http_status_code=400
    )
    stubber.add_response("transact_write_items", {}, {"TransactItems": ANY, "ClientRequestToken": ANY})
    recorder = OperationRecorder(store._table.client)
    with stubber:
        store.commit([created(make_memory())])
        stubber.assert_no_pending_responses()
    tokens = {params["ClientRequestToken"] for _, params in recorder.calls}
    assert recorder.operations == ["TransactWriteItems"] * 3 and len(tokens) == 1


def test_stubber_throttling_gives_store_error_after_the_bound(stubbed, sleeps: RecordingSleep):
    store, stubber = stubbed
    for _ in range(3):
        stubber.add_client_error(
            "transact_write_items", service_error_code="ProvisionedThroughputExceededException"
        )
    with stubber, pytest.raises(StoreError, match="ProvisionedThroughputExceeded"):
        store.commit([created(make_memory())])
    assert len(sleeps.delays) == 2


def test_stubber_condition_failure_is_a_conflict_not_retried(stubbed):
    store, stubber = stubbed
    stubber.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={
            "CancellationReasons": [
                {"Code": "ConditionalCheckFailed", "Item": {"version": {"N": "5"}}},
                {"Code": "None"},
                {"Code": "None"},
            ]
        },
    )
    m = make_memory()
    with stubber, pytest.raises(ConflictError) as info:
        store.commit([created(m)])
    assert (info.value.memory_id, info.value.actual) == (m.id, 5)


def test_stubber_failed_condition_owned_by_no_write_is_a_store_error_not_a_conflict(stubbed):
    store, stubber = stubbed
    reasons = [{"Code": "None"}] * 8 + [{"Code": "ConditionalCheckFailed"}]  # past the plan's actions
    stubber.add_client_error(
        "transact_write_items", service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": reasons},
    )  # fmt: skip
    with stubber, pytest.raises(StoreError, match="no write owns"):
        store.commit([created(make_memory())])


def test_stubber_unprocessed_batch_keys_are_retried(stubbed, sleeps: RecordingSleep):
    store, stubber = stubbed
    a, b = make_memory("a"), make_memory("b")
    item_a, item_b = memory_to_item(a), memory_to_item(b)
    key_b = {"pk": item_b["pk"], "sk": item_b["sk"]}
    stubber.add_response(
        "batch_get_item",
        {
            "Responses": {"tbl": [item_a]},
            "UnprocessedKeys": {"tbl": {"Keys": [key_b], "ConsistentRead": True}},
        },
    )
    stubber.add_response("batch_get_item", {"Responses": {"tbl": [item_b]}, "UnprocessedKeys": {}})
    with stubber:
        got = store.get_many("t1", [a.id, b.id])
    assert sorted(m.id for m in got) == sorted([a.id, b.id]) and len(sleeps.delays) == 1


def test_stubber_read_errors_are_store_errors(stubbed):
    store, stubber = stubbed
    stubber.add_client_error("query", service_error_code="ProvisionedThroughputExceededException")
    stubber.add_client_error("query", service_error_code="ResourceNotFoundException")  # `get` is a Query
    with stubber:
        with pytest.raises(StoreError, match="ProvisionedThroughputExceeded"):
            store.get("t1", "x")
        with pytest.raises(StoreError, match=r"template\.yaml"):
            store.get("t1", "x")


def test_a_memory_committed_before_due_items_gets_one_when_scheduled(
    store: DynamoDBMemoryStore, dynamodb_client: Any
):
    """The first run's full scan schedules memories that have no `DUE` item; a changed one is left alone."""
    kept, changed = make_memory("kept"), make_memory("changed")
    store.commit([created(kept), created(changed)])
    for m in (kept, changed):  # as a table written before due items existed holds them
        key = {"pk": {"S": f"T#t1#M#{m.id}"}, "sk": {"S": "DUE"}}
        dynamodb_client.delete_item(TableName=store.table_name, Key=key)
    assert not store.list_due("t1", "decay", T0 + timedelta(days=400)).items
    due = T0 + timedelta(days=30)
    store.schedule("t1", [DueAt(kept.id, 1, due), DueAt(changed.id, 7, due)])  # `changed` is at 1
    assert [m.id for m in store.list_due("t1", "decay", due).items] == [kept.id]
    assert not store.list_due("t1", "decay", due - timedelta(seconds=1)).items
