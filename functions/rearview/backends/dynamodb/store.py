"""`DynamoDBMemoryStore`: the source of truth in AWS. One table, no Scan anywhere.

Item types (base table: `pk` + `sk`, both strings; layouts in `codec`, `writes` and `checkpoints`):

| item | `pk` | `sk` |
|---|---|---|
| memory | `T#<tenant>#M#<id>` | `MEMORY` |
| recall bookkeeping (`recall`) | `T#<tenant>#M#<id>` | `RECALL` |
| history event | `T#<tenant>#M#<id>` | `H#<version:010d>#<event id>` |
| lineage (a memory derived from this one) | `T#<tenant>#M#<source id>` | `D#<derived id>` |
| content-hash lookup | `T#<tenant>#HASH#<scope_key>#<hash>` | `M#<id>` |
| idempotency key | `T#<tenant>#IDEM#<key>` | `IDEM` |
| job checkpoint | `T#<tenant>#JOB#<job>` | `CHECKPOINT` |
| tenant registry | `REGISTRY#TENANTS` | `<tenant>` |

History events share the memory's item collection, so `history()` and `purge()` are one strongly
consistent Query. History carries no TTL: the stream consumer that archives a TTL-expired memory
takes its history along, then purges. Indexes and listing: `schema` and `listing`.

Consistency: base-table reads (`get`, `get_many`, `find_*`, `history`, `purge`, the version
pre-read of `commit`) are strongly consistent; GSI reads (`list_memories`, `stats`) are eventually
consistent, like every DynamoDB GSI; `tenants()` is an eventually consistent Query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rearview.backends.dynamodb import due, recall
from rearview.backends.dynamodb.codec import event_from_item, memory_from_item, python_value, string_value
from rearview.backends.dynamodb.expressions import Expression, not_expired
from rearview.backends.dynamodb.keys import (
    HISTORY_PREFIX,
    IDEMPOTENCY_SK,
    LINEAGE_PREFIX,
    MEMORY_SK,
    RECALL_SK,
    REGISTRY_PK,
    hash_lookup_pk,
    hash_lookup_sk,
    idempotency_pk,
    lineage_sk,
    memory_pk,
    tenant_pk,
)
from rearview.backends.dynamodb.listing import list_memories, query_items
from rearview.backends.dynamodb.schema import GSI_TENANT, ensure_table
from rearview.backends.dynamodb.table_client import (
    TableClient,
    TransactionCancelledError,
    error_code,
    store_error,
)
from rearview.backends.dynamodb.writes import CommitPlan, StoredState, check_writes
from rearview.errors import ConflictError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus, Page, StoreStats
from rearview.ports import DueAt, DueJob, StoreWrite, Touch
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.retry import RetryPolicy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef


class DynamoDBMemoryStore:
    """A `MemoryStore` on one DynamoDB table (design in the package and module docstrings).

    The constructor does no I/O; the boto3 client is created on first use unless one is given.
    Every method raises only `rearview.errors` types: `ConflictError` on a version mismatch,
    `InvalidInputError` for what DynamoDB cannot hold, `StoreError` once retries are spent.
    """

    def __init__(
        self,
        table_name: str,
        client: DynamoDBClient | None = None,
        *,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._table = TableClient(table_name, client, retry or RetryPolicy())
        self._clock = clock or SystemClock()
        self._registered: set[str] = set()

    @property
    def table_name(self) -> str:
        return self._table.name

    def ensure_schema(self) -> None:
        """Create the table (as in template.yaml) if missing, with TTL; verify the GSIs if present."""
        ensure_table(self._table)

    # ------------------------------------------------------------------ writes

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        """Apply all writes in one TransactWriteItems: all land or none do.

        `expected_version=None` requires the memory to be absent; otherwise its stored `version`
        must equal `expected_version`. Any mismatch raises `ConflictError` and writes nothing.
        A commit that needs more than 100 transaction actions (about 20 memories) or 4 MB is
        refused with `InvalidInputError` before anything is sent; it is never split. After
        bounded retries of throttling/conflicting transactions it raises `StoreError`, and
        because the transaction is atomic nothing of it is stored.
        """
        if not writes:
            return
        check_writes(writes)
        previous = self._previous_state(writes)
        now = self._clock.now()
        plan = CommitPlan(self._table.name)
        for write in writes:
            plan.add_write(write, previous.get((write.memory.tenant_id, write.memory.id)), now)
        new_tenants = {w.memory.tenant_id for w in writes} - self._registered
        for tenant_id in sorted(new_tenants):
            plan.add_tenant_registration(tenant_id, now)
        plan.check_limits(len(writes))
        self._record_lineage(writes)
        try:
            self._table.transact(plan.actions)
        except TransactionCancelledError as cancelled:
            raise plan.commit_error(cancelled.reasons) from cancelled
        self._registered |= new_tenants

    def _record_lineage(self, writes: Sequence[StoreWrite]) -> None:
        """A lineage item in each source's collection, before the derived memory lands (idempotent).

        Outside the transaction (a summary has up to 200 sources): an item naming a memory whose
        commit then failed is harmless, a derived memory without one would be an erasure blind spot.
        """
        items = [
            {
                "pk": string_value(memory_pk(w.memory.tenant_id, source_id)),
                "sk": string_value(lineage_sk(w.memory.id)),
                "item_type": string_value("lineage"),
                "memory_id": string_value(w.memory.id),
            }
            for w in writes
            for source_id in w.memory.derived_from
        ]
        if items:
            self._table.batch_put(items)

    def derived_ids(self, tenant_id: str, source_id: str) -> list[str]:
        """The lineage items of the source's collection (one strongly consistent Query)."""
        query = self._collection_query(memory_pk(tenant_id, source_id), sk_prefix=LINEAGE_PREFIX)
        return [str(python_value(item["memory_id"])) for item in query_items(self._table, query)]

    def rewrite_history(self, tenant_id: str, memory_id: str, events: Sequence[HistoryEvent]) -> None:
        """Each history item holding one of these events' ids gets the new event body (same key)."""
        replacements = {e.id: e for e in events}
        query = self._collection_query(memory_pk(tenant_id, memory_id), sk_prefix=HISTORY_PREFIX)
        items = []
        for item in query_items(self._table, query):
            event = replacements.get(event_from_item(item).id)
            if event is not None:
                items.append({**item, "event": string_value(event.model_dump_json())})
        if items:
            self._table.batch_put(items)

    def _previous_state(self, writes: Sequence[StoreWrite]) -> dict[tuple[str, str], StoredState]:
        """Stored state of the memories being updated; ConflictError if stale.

        The transaction re-checks `version`, so this read is exactly the state it replaces.
        """
        updates = [w for w in writes if w.expected_version is not None]
        if not updates:
            return {}
        keys = [self._memory_key(w.memory.tenant_id, w.memory.id) for w in updates]
        projection = ("id", "tenant_id", *StoredState.attributes())
        found = {
            (str(python_value(item["tenant_id"])), str(python_value(item["id"]))): StoredState.from_item(item)
            for item in self._table.batch_get(keys, projection)
            if "id" in item and "tenant_id" in item
        }
        for write in updates:
            current = found.get((write.memory.tenant_id, write.memory.id))
            actual = current.version if current is not None else None
            if actual != write.expected_version:
                raise ConflictError(write.memory.id, write.expected_version, actual)
        return found

    def touch(self, tenant_id: str, touches: Sequence[Touch]) -> None:
        """Set strength, last access and access count; no version bump, no history.

        On each memory's recall item (`recall`): one conditional UpdateItem of a small item per
        touch, one write unit whatever the memory's size, no index entry written. A touch older
        than the recall recorded changes nothing; memories that no longer exist keep no trace.
        `StoreError` if the backend keeps failing.
        """
        recall.record(self._table, tenant_id, list({t.memory_id: t for t in touches}.values()))

    def purge(self, tenant_id: str, memory_id: str) -> None:
        """Delete the memory, its history, lineage, recall item, hash lookup and idempotency key.

        Idempotent. Not atomic: the memory item goes last, so a purge interrupted by `StoreError`
        can simply be repeated to finish (the memory item still names the lookups to remove); then
        the recall item once more, so that a recall racing the purge leaves nothing (`recall`).
        """
        collection = list(query_items(self._table, self._collection_query(memory_pk(tenant_id, memory_id))))
        memory_item = next((i for i in collection if python_value(i["sk"]) == MEMORY_SK), None)
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in collection if i is not memory_item]
        if memory_item is not None:
            stored = memory_from_item(memory_item)
            lookup_pk = hash_lookup_pk(tenant_id, stored.scope_key, stored.content_hash)
            keys.append({"pk": string_value(lookup_pk), "sk": string_value(hash_lookup_sk(memory_id))})
            if stored.idempotency_key is not None:
                self._release_idempotency_key(tenant_id, stored.idempotency_key, memory_id)
            keys.extend(  # its lineage in its sources' collections
                {"pk": string_value(memory_pk(tenant_id, s)), "sk": string_value(lineage_sk(memory_id))}
                for s in stored.derived_from
            )
        self._table.batch_delete(keys)
        if memory_item is not None:
            self._table.batch_delete([{"pk": memory_item["pk"], "sk": memory_item["sk"]}])
        self._table.batch_delete([recall.recall_key(memory_pk(tenant_id, memory_id))])

    def _release_idempotency_key(self, tenant_id: str, key: str, memory_id: str) -> None:
        """Delete the idempotency item unless another memory owns the key by now."""
        from botocore.exceptions import ClientError

        expr = Expression()
        key_is_ours = f"{expr.name('memory_id')} = {expr.string(memory_id)}"
        try:
            self._table.client.delete_item(
                TableName=self._table.name,
                Key={"pk": string_value(idempotency_pk(tenant_id, key)), "sk": string_value(IDEMPOTENCY_SK)},
                ConditionExpression=key_is_ours,
                ExpressionAttributeNames=expr.names,
                ExpressionAttributeValues=expr.values,
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise store_error("DeleteItem", exc) from exc

    # ------------------------------------------------------------------ reads

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        """The memory (strongly consistent read), or None if absent or past `expires_at`.

        One Query of its collection from the memory item to its recall item (nothing sorts between).
        """
        query = self._collection_query(memory_pk(tenant_id, memory_id), sk_between=(MEMORY_SK, RECALL_SK))
        memories, recalls = recall.split(query_items(self._table, query))
        item = memories[0] if memories else None
        return self._live(tenant_id, item, recalls) if item is not None else None

    def get_many(self, tenant_id: str, memory_ids: Sequence[str], *, recalls: bool = True) -> list[Memory]:
        """Existing, unexpired memories among `memory_ids` (BatchGetItem, unprocessed keys retried).

        Each memory's recall item is asked for in the same BatchGetItem, unless `recalls=False`
        (then the recall fields are the memory item's own, as of its last commit).
        """
        keys = [self._memory_key(tenant_id, memory_id) for memory_id in dict.fromkeys(memory_ids)]
        wanted = recall.keys_with_recalls(keys) if recalls else keys
        memories, recall_items = recall.split(self._table.batch_get(wanted))
        found = (self._live(tenant_id, item, recall_items) for item in memories)
        return [m for m in found if m is not None]

    def find_by_hash(
        self, tenant_id: str, scope_key: str, content_hash: str, agent_id: str | None = None
    ) -> Memory | None:
        """The active, unexpired memory with this content hash in this dedup scope (newest if several).

        With `agent_id`, only one that agent wrote (the lookup item lists every writer's copy).
        """
        query = self._collection_query(hash_lookup_pk(tenant_id, scope_key, content_hash))
        items = query_items(self._table, query)
        ids = [str(python_value(item["memory_id"])) for item in items if "memory_id" in item]
        candidates = [
            m
            for m in self.get_many(tenant_id, ids)
            if m.status is MemoryStatus.ACTIVE
            and m.content_hash == content_hash
            and m.scope_key == scope_key
            and agent_id in (None, m.agent_id)
        ]
        return max(candidates, key=lambda m: (m.updated_at, m.id), default=None)

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        """The unexpired memory first written with this idempotency key, if any."""
        return self.find_by_idempotency_keys(tenant_id, [key]).get(key)

    def list_expired(self, tenant_id: str, limit: int = 100) -> list[Memory]:
        """[]: DynamoDB's TTL deletes expired items and the stream archives each (`handlers/stream.py`)."""
        return []

    def list_due(
        self, tenant_id: str, job: DueJob, before: datetime, cursor: str | None = None, limit: int = 100
    ) -> Page:
        """What is due for `job` by `before`: one Query of its due GSI, one BatchGetItem (`due`)."""
        return due.list_due(self._table, tenant_id, job, before, cursor, limit, self._clock.now())

    def schedule(self, tenant_id: str, entries: Sequence[DueAt]) -> None:
        """Move each memory in the due GSIs: one conditional UpdateItem each (`due`)."""
        due.schedule(self._table, tenant_id, entries)

    def find_by_idempotency_keys(self, tenant_id: str, keys: Sequence[str]) -> dict[str, Memory]:
        """Each key's idempotency item (BatchGetItem), then their memories (BatchGetItem): two round trips."""
        unique = list(dict.fromkeys(keys))
        lookups = [
            {"pk": string_value(idempotency_pk(tenant_id, key)), "sk": string_value(IDEMPOTENCY_SK)}
            for key in unique
        ]
        ids = {
            str(python_value(item["memory_id"]))
            for item in self._table.batch_get(lookups, projection=("memory_id",))
            if "memory_id" in item
        }
        memories = self.get_many(tenant_id, sorted(ids))
        wanted = set(unique)
        return {
            m.idempotency_key: m
            for m in memories
            if m.idempotency_key is not None and m.idempotency_key in wanted
        }

    def history(self, tenant_id: str, memory_id: str) -> list[HistoryEvent]:
        """The memory's events, oldest first (by version, then event id); empty once purged."""
        query = self._collection_query(memory_pk(tenant_id, memory_id), sk_prefix=HISTORY_PREFIX)
        return [event_from_item(item) for item in query_items(self._table, query)]

    def list_memories(
        self,
        tenant_id: str,
        filter: MemoryFilter,
        cursor: str | None = None,
        limit: int = 100,
        *,
        oldest_first: bool = False,
    ) -> Page:
        """Memories matching `filter` (exactly `MemoryFilter.matches`), newest `updated_at` first.

        Every criterion is applied inside the Query (key condition or FilterExpression); pages are
        full (`limit` items) unless the listing is exhausted, and then `cursor` is None.
        `oldest_first` reads the same partitions forward.
        """
        now = self._clock.now()
        return list_memories(self._table, tenant_id, filter, cursor, limit, now, oldest_first=oldest_first)

    def stats(self, tenant_id: str) -> StoreStats:
        """Counts of unexpired memories by type and status, oldest/newest `created_at`.

        One paged Query of the tenant's partition of `gsi1_tenant_updated` (reads every memory of
        the tenant, never another tenant's; no Scan).
        """
        expr = Expression()
        query: QueryInputTypeDef = {
            "TableName": self._table.name,
            "IndexName": GSI_TENANT,
            "KeyConditionExpression": f"{expr.name('gsi1pk')} = {expr.string(tenant_pk(tenant_id))}",
            "FilterExpression": not_expired(expr, self._clock.now()),
            "ProjectionExpression": ", ".join(expr.name(a) for a in ("type", "status", "created_at")),
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
        }
        by_type: dict[str, int] = {}
        by_status: dict[str, int] = {}
        created: list[str] = []
        for item in query_items(self._table, query):
            memory_type, status = str(python_value(item["type"])), str(python_value(item["status"]))
            by_type[memory_type] = by_type.get(memory_type, 0) + 1
            by_status[status] = by_status.get(status, 0) + 1
            created.append(str(python_value(item["created_at"])))
        return StoreStats(
            total=len(created),
            by_type=by_type,
            by_status=by_status,
            oldest=datetime.fromisoformat(min(created)) if created else None,
            newest=datetime.fromisoformat(max(created)) if created else None,
        )

    def tenants(self) -> list[str]:
        """Every tenant that has committed a memory (from the registry items; a Query, not a Scan)."""
        query = self._collection_query(REGISTRY_PK, consistent=False)
        return sorted(str(python_value(item["tenant_id"])) for item in query_items(self._table, query))

    # ------------------------------------------------------------------ helpers

    def _live(
        self, tenant_id: str, item: Mapping[str, Any], recalls: Mapping[str, Mapping[str, Any]]
    ) -> Memory | None:
        memory = memory_from_item(item)
        if memory.tenant_id != tenant_id or memory.is_expired(self._clock.now()):
            return None
        return recall.merged(memory, recalls.get(str(item["pk"]["S"])))

    @staticmethod
    def _memory_key(tenant_id: str, memory_id: str) -> dict[str, AttributeValueTypeDef]:
        return {"pk": string_value(memory_pk(tenant_id, memory_id)), "sk": string_value(MEMORY_SK)}

    def _collection_query(
        self,
        pk: str,
        *,
        sk_prefix: str | None = None,
        sk_between: tuple[str, str] | None = None,
        consistent: bool = True,
    ) -> QueryInputTypeDef:
        """A Query of one partition, or of its `sk_prefix` / `sk_between` items (consistent by default)."""
        expr = Expression()
        condition = f"{expr.name('pk')} = {expr.string(pk)}"
        if sk_prefix is not None:
            condition += f" AND begins_with({expr.name('sk')}, {expr.string(sk_prefix)})"
        if sk_between is not None:
            low, high = (expr.string(bound) for bound in sk_between)
            condition += f" AND {expr.name('sk')} BETWEEN {low} AND {high}"
        return {
            "TableName": self._table.name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
            "ConsistentRead": consistent,
        }
