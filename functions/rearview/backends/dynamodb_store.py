"""DynamoDB `MemoryStore`: the source of truth in AWS. One table, no Scan anywhere.

The table is defined in `template.yaml` (resource `MemoryTable`); `table_definition()` mirrors it
for `ensure_schema()` and a test keeps the two identical. Every key part is escaped (`%` → `%25`,
`#` → `%23`), so no tenant, session, scope or idempotency key can spell another one's key, and
every partition key starts with the tenant: each query is scoped to one tenant by construction.

Item types (base table: `pk` + `sk`, both strings):

| item | `pk` | `sk` |
|---|---|---|
| memory | `T#<tenant>#M#<id>` | `MEMORY` |
| history event | `T#<tenant>#M#<id>` | `H#<version:010d>#<event id>` |
| content-hash lookup | `T#<tenant>#HASH#<scope_key>#<hash>` | `M#<id>` |
| idempotency key | `T#<tenant>#IDEM#<key>` | `IDEM` |
| tenant registry | `REGISTRY#TENANTS` | `<tenant>` |

- memory: every `Memory` field as its own attribute (times as fixed-width ISO-8601 UTC,
  `metadata` as JSON), `expires_at` (the TTL attribute, epoch seconds rounded up),
  `expires_iso` (the exact instant, for read-time expiry checks) and the GSI keys below.
- history event: `event`, the `HistoryEvent` as JSON. It shares the memory's item collection,
  so `history()` and `purge()` are one strongly consistent Query. History carries no TTL: the
  stream consumer that archives a TTL-expired memory takes its history along, then purges.
- content-hash lookup: `memory_id`, `expires_at`; it exists exactly while the memory is
  `active` with that hash in that scope (exact dedup, strongly consistent).
- idempotency key: `memory_id`, `expires_at`, `expires_iso`; first writer wins.
- tenant registry: `tenant_id`, `first_seen`; an idempotent update added to the first commit a
  process makes for a tenant (so `tenants()` is a Query of one small partition, never a Scan).

Global secondary indexes (projection ALL; only memory items carry their keys):

| index | partition key | sort key |
|---|---|---|
| `gsi1_tenant_updated` | `gsi1pk` = `T#<tenant>` | `updated_key` = `<updated_at>#<id>` |
| `gsi2_session_updated` | `gsi2pk` = `T#<tenant>#S#<session>` (sparse) | `updated_key` |
| `gsi3_type_status_updated` | `gsi3pk` = `T#<tenant>#<type>#<status>` | `updated_key` |
| `gsi4_status_created` | `gsi4pk` = `T#<tenant>#<status>` | `created_key` = `<created_at>#<id>` |

- `gsi1`: `list()` across all types and statuses, newest first; `stats()`.
- `gsi2`: `list(session_id=...)`: one session's memories, newest first.
- `gsi3`: `list(types=..., statuses=...)`: one partition per (type, status) pair, merged
  newest first (used when at most 4 partitions cover the filter, e.g. the default `active`).
- `gsi4`: `page_by_created()`: lifecycle jobs paging a tenant's memories of one status oldest
  first, in an order updates do not shuffle (a stable checkpoint for resumable jobs).

`list()` picks the narrowest index for the filter and applies every other `MemoryFilter`
criterion (and expiry) in the Query's FilterExpression; it keeps paging until `limit` items are
gathered or the partitions are exhausted. Its cursor is an opaque, encoded `updated_key` of the
last item returned: each partition resumes with `updated_key < cursor`, which is the
`LastEvaluatedKey` of every partition at once, so merged listings page exactly.

Consistency: base-table reads (`get`, `get_many`, `find_*`, `history`, `purge`, the version
pre-read of `commit`) are strongly consistent; GSI reads (`list`, `stats`, `page_by_created`) are
eventually consistent, like every DynamoDB GSI; `tenants()` is an eventually consistent Query.

Retries: a client created here uses botocore's standard retry mode for every call; transactions
and batch calls add their own bounded backoff (`RetryPolicy`) for what botocore does not retry
(transaction conflicts, throttled items inside a cancelled transaction, unprocessed batch keys).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import heapq
import itertools
import json
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from rearview.clock import Clock, SystemClock
from rearview.errors import ConflictError, InvalidInputError, StoreError
from rearview.models import HistoryEvent, Memory, MemoryFilter, MemoryStatus, MemoryType, Page, StoreStats
from rearview.ports import StoreWrite, Touch
from rearview.retry import RetryPolicy

if TYPE_CHECKING:
    from botocore.exceptions import ClientError
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        CreateTableInputTypeDef,
        GlobalSecondaryIndexTypeDef,
        KeysAndAttributesTypeDef,
        QueryInputTypeDef,
        TransactWriteItemTypeDef,
        WriteRequestTypeDef,
    )

    Item = dict[str, AttributeValueTypeDef]

__all__ = [
    "GSI_SESSION",
    "GSI_STATUS_CREATED",
    "GSI_TENANT",
    "GSI_TYPE_STATUS",
    "MAX_ITEM_BYTES",
    "MAX_TRANSACTION_ITEMS",
    "DynamoDBMemoryStore",
    "RetryPolicy",
    "is_memory_item",
    "item_size",
    "memory_from_item",
    "memory_to_item",
    "table_definition",
]

GSI_TENANT: Final = "gsi1_tenant_updated"
GSI_SESSION: Final = "gsi2_session_updated"
GSI_TYPE_STATUS: Final = "gsi3_type_status_updated"
GSI_STATUS_CREATED: Final = "gsi4_status_created"

MAX_ITEM_BYTES: Final = 400 * 1024
"""DynamoDB's item size limit (also applies to every GSI projection of the item)."""
MAX_TRANSACTION_ITEMS: Final = 100
"""TransactWriteItems accepts at most 100 actions; a larger commit is refused, never split."""
MAX_TRANSACTION_BYTES: Final = 4 * 1024 * 1024

TTL_ATTRIBUTE: Final = "expires_at"
_MEMORY_SK: Final = "MEMORY"
_IDEM_SK: Final = "IDEM"
_HISTORY_PREFIX: Final = "H#"
_REGISTRY_PK: Final = "REGISTRY#TENANTS"
_BATCH_GET_MAX: Final = 100
_BATCH_WRITE_MAX: Final = 25
_MAX_MERGED_PARTITIONS: Final = 4
_MAX_QUERY_PAGE: Final = 1000
_JSON_FIELDS: Final = frozenset({"metadata"})

_THROTTLE_CODES: Final = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "InternalServerError",
        "ServiceUnavailable",
    }
)
_RETRYABLE_REASONS: Final = frozenset(
    {"ThrottlingError", "TransactionConflict", "ProvisionedThroughputExceeded"}
)

_T = TypeVar("_T")


# --------------------------------------------------------------------------- keys & items


def _part(value: str) -> str:
    """One key component, escaped so it can never contain the `#` separator."""
    return value.replace("%", "%25").replace("#", "%23")


def _key(*parts: str) -> str:
    return "#".join(_part(p) for p in parts)


def _ts(when: datetime) -> str:
    """Fixed-width ISO-8601 UTC with microseconds: lexicographic order == chronological order."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _memory_pk(tenant_id: str, memory_id: str) -> str:
    return "T#" + _key(tenant_id) + "#M#" + _part(memory_id)


def _hash_pk(tenant_id: str, scope_key: str, content_hash: str) -> str:
    return "T#" + _key(tenant_id) + "#HASH#" + _key(scope_key, content_hash)


def _idem_pk(tenant_id: str, key: str) -> str:
    return "T#" + _key(tenant_id) + "#IDEM#" + _part(key)


def _tenant_pk(tenant_id: str) -> str:
    return "T#" + _part(tenant_id)


def _session_pk(tenant_id: str, session_id: str) -> str:
    return _tenant_pk(tenant_id) + "#S#" + _part(session_id)


def _type_status_pk(tenant_id: str, memory_type: MemoryType, status: MemoryStatus) -> str:
    return _tenant_pk(tenant_id) + "#" + _key(memory_type.value, status.value)


def _status_pk(tenant_id: str, status: MemoryStatus) -> str:
    return _tenant_pk(tenant_id) + "#" + _part(status.value)


def _updated_key(memory: Memory) -> str:
    return f"{_ts(memory.updated_at)}#{_part(memory.id)}"


def _created_key(memory: Memory) -> str:
    return f"{_ts(memory.created_at)}#{_part(memory.id)}"


def _s(value: str) -> AttributeValueTypeDef:
    return {"S": value}


def _n(value: float) -> AttributeValueTypeDef:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInputError("memory", f"number {value!r} cannot be stored")
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def _to_attr(value: Any) -> AttributeValueTypeDef:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, datetime):
        return _s(_ts(value))
    if isinstance(value, str):
        return _s(str(value))
    if isinstance(value, int | float):
        return _n(value)
    if isinstance(value, list | tuple):
        return {"L": [_to_attr(v) for v in value]}
    raise InvalidInputError("memory", f"cannot store a value of type {type(value).__name__}")


def _from_attr(attr: Mapping[str, Any]) -> Any:
    if "S" in attr:
        return attr["S"]
    if "N" in attr:
        text = str(attr["N"])
        return float(text) if any(c in text for c in ".eE") else int(text)
    if "BOOL" in attr:
        return bool(attr["BOOL"])
    if "L" in attr:
        return [_from_attr(v) for v in attr["L"]]
    if "M" in attr:
        return {k: _from_attr(v) for k, v in attr["M"].items()}
    return None


def memory_to_item(memory: Memory) -> Item:
    """The memory item (keys, GSI keys, TTL and every field); public for stream consumers."""
    item: Item = {
        "pk": _s(_memory_pk(memory.tenant_id, memory.id)),
        "sk": _s(_MEMORY_SK),
        "item_type": _s("memory"),
        "gsi1pk": _s(_tenant_pk(memory.tenant_id)),
        "gsi3pk": _s(_type_status_pk(memory.tenant_id, memory.type, memory.status)),
        "gsi4pk": _s(_status_pk(memory.tenant_id, memory.status)),
        "updated_key": _s(_updated_key(memory)),
        "created_key": _s(_created_key(memory)),
    }
    if memory.session_id is not None:
        item["gsi2pk"] = _s(_session_pk(memory.tenant_id, memory.session_id))
    for name, value in memory:
        if value is None or name == "expires_at":
            continue
        item[name] = _s(json.dumps(value, sort_keys=True)) if name in _JSON_FIELDS else _to_attr(value)
    if memory.expires_at is not None:
        item.update(_expiry_attrs(memory.expires_at))
    return item


def _expiry_attrs(expires_at: datetime | None) -> Item:
    if expires_at is None:
        return {}
    # TTL wants whole epoch seconds; round up so DynamoDB never deletes before the exact instant.
    return {TTL_ATTRIBUTE: _n(math.ceil(expires_at.timestamp())), "expires_iso": _s(_ts(expires_at))}


def is_memory_item(item: Mapping[str, Any]) -> bool:
    """Whether a raw item (from a Query or a stream image) is a memory, not a history/lookup item."""
    return item.get("sk") == {"S": _MEMORY_SK} and item.get("item_type") == {"S": "memory"}


def memory_from_item(item: Mapping[str, Any]) -> Memory:
    """The `Memory` stored in a memory item (as read by the client or found in a stream image)."""
    data: dict[str, Any] = {}
    for name in Memory.model_fields:
        if name == "expires_at":
            continue
        attr = item.get(name)
        if attr is None:
            continue
        value = _from_attr(attr)
        data[name] = json.loads(value) if name in _JSON_FIELDS else value
    if "expires_iso" in item:
        data["expires_at"] = _from_attr(item["expires_iso"])
    return Memory.model_validate(data)


def _attr_size(attr: Mapping[str, Any]) -> int:
    """An upper bound of DynamoDB's size for one attribute value, in bytes."""
    if "S" in attr:
        return len(str(attr["S"]).encode("utf-8"))
    if "N" in attr:
        return len(str(attr["N"])) + 1
    if "L" in attr:
        return 3 + sum(_attr_size(v) + 1 for v in attr["L"])
    if "M" in attr:
        return 3 + sum(len(k.encode("utf-8")) + _attr_size(v) + 1 for k, v in attr["M"].items())
    return 1


def item_size(item: Mapping[str, Any]) -> int:
    """An upper bound of the stored size of an item, to refuse it before DynamoDB does."""
    return sum(len(name.encode("utf-8")) + _attr_size(value) for name, value in item.items())


# --------------------------------------------------------------------------- expressions


class _Expr:
    """Placeholders for one request, so conditions can be bound to names and combined safely."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValueTypeDef] = {}

    def n(self, attribute: str) -> str:
        placeholder = f"#{attribute}"
        self.names[placeholder] = attribute
        return placeholder

    def v(self, value: AttributeValueTypeDef) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def s(self, value: str) -> str:
        return self.v(_s(value))

    def one_of(self, attribute: str, values: Iterable[str]) -> str:
        return f"{self.n(attribute)} IN ({', '.join(self.s(v) for v in values)})"


def _all_of(conditions: Mapping[str, str]) -> str:
    """AND of named conditions (the names document intent; DynamoDB only sees the clauses)."""
    return " AND ".join(f"({clause})" for clause in conditions.values())


def _not_expired(expr: _Expr, now: datetime) -> str:
    expires = expr.n("expires_iso")
    return f"attribute_not_exists({expires}) OR {expires} > {expr.s(_ts(now))}"


# --------------------------------------------------------------------------- cursors


def _encode_cursor(position: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"v": 1, "after": position}).encode()).decode()


def _decode_cursor(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        position = data["after"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page") from exc
    if not isinstance(position, str):
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page")
    return position


# --------------------------------------------------------------------------- errors


class _TransactionCancelledError(Exception):
    """A transaction refused by a condition (never retried); `reasons` align with the items."""

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__("transaction cancelled by a condition")
        self.reasons = reasons


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _store_error(operation: str, exc: Exception) -> StoreError | InvalidInputError:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        code = _error_code(exc)
        message = str(exc.response.get("Error", {}).get("Message", ""))
        if code == "ValidationException" and "size" in message.lower():
            return InvalidInputError("memory", f"is too large for DynamoDB ({message}); the limit is 400 KB")
        if code == "ResourceNotFoundException":
            return StoreError(
                f"DynamoDB table not found during {operation}: deploy template.yaml or ensure_schema()"
            )
        return StoreError(f"DynamoDB {operation} failed ({code}): {message}")
    return StoreError(f"DynamoDB {operation} failed: {exc}")


# --------------------------------------------------------------------------- the store


@dataclass(slots=True)
class _Plan:
    """The transaction for one commit: its actions and which write each action belongs to."""

    items: list[TransactWriteItemTypeDef] = field(default_factory=list)
    owners: list[StoreWrite | None] = field(default_factory=list)
    bytes: int = 0

    def add(
        self, action: TransactWriteItemTypeDef, owner: StoreWrite | None, item: Item | None = None
    ) -> None:
        self.items.append(action)
        self.owners.append(owner)
        if item is not None:
            self.bytes += item_size(item)

    def check_limits(self, writes: int) -> None:
        if len(self.items) > MAX_TRANSACTION_ITEMS:
            raise InvalidInputError(
                "writes",
                f"this commit of {writes} memories needs {len(self.items)} DynamoDB transaction actions; "
                f"the limit is {MAX_TRANSACTION_ITEMS} (commit fewer memories at once; it is never split)",
            )
        if self.bytes > MAX_TRANSACTION_BYTES:
            raise InvalidInputError(
                "writes", f"this commit is {self.bytes} bytes; DynamoDB transactions hold 4 MB"
            )


class DynamoDBMemoryStore:
    """A `MemoryStore` on one DynamoDB table (design in the module docstring).

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
        self._table = table_name
        self._client_value = client
        self._client_lock = threading.Lock()
        self._clock = clock or SystemClock()
        self._retry = retry or RetryPolicy()
        self._registered: set[str] = set()

    @property
    def table_name(self) -> str:
        return self._table

    @property
    def _client(self) -> DynamoDBClient:
        if self._client_value is None:
            with self._client_lock:
                if self._client_value is None:
                    self._client_value = _create_client()
        return self._client_value

    def _call(self, operation: str, fn: Callable[..., _T], **kwargs: Any) -> _T:
        """One SDK call, its errors translated at the boundary."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise _store_error(operation, exc) from exc

    def _get_item(self, pk: str, sk: str) -> dict[str, Any] | None:
        """One item by key (strongly consistent), or None."""
        out = self._call(
            "GetItem",
            self._client.get_item,
            TableName=self._table,
            Key={"pk": _s(pk), "sk": _s(sk)},
            ConsistentRead=True,
        )
        return out.get("Item")

    # ------------------------------------------------------------------ schema

    def ensure_schema(self) -> None:
        """Create the table (as in template.yaml) if missing, with TTL; verify the GSIs if present.

        Idempotent. A table that exists without one of the GSIs is a `StoreError` (deployed tables
        are changed through the template, not from here).
        """
        from botocore.exceptions import ClientError

        try:
            described = self._client.describe_table(TableName=self._table)["Table"]
        except ClientError as exc:
            if _error_code(exc) != "ResourceNotFoundException":
                raise _store_error("DescribeTable", exc) from exc
            self._create_table()
            return
        present = {gsi["IndexName"] for gsi in described.get("GlobalSecondaryIndexes", [])}
        missing = {GSI_TENANT, GSI_SESSION, GSI_TYPE_STATUS, GSI_STATUS_CREATED} - present
        if missing:
            raise StoreError(f"table {self._table} lacks indexes {sorted(missing)}: redeploy template.yaml")

    def _create_table(self) -> None:
        client = self._client
        self._call("CreateTable", client.create_table, **table_definition(self._table))
        self._call("DescribeTable", client.get_waiter("table_exists").wait, TableName=self._table)
        self._call(
            "UpdateTimeToLive",
            client.update_time_to_live,
            TableName=self._table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )

    # ------------------------------------------------------------------ writes

    def commit(self, writes: Sequence[StoreWrite]) -> None:
        """Apply all writes in one TransactWriteItems: all land or none do.

        `expected_version=None` requires the memory to be absent; otherwise its stored `version`
        must equal `expected_version`. Any mismatch raises `ConflictError` and writes nothing.
        A commit that needs more than 100 transaction actions (about 25 memories) or 4 MB is
        refused with `InvalidInputError` before anything is sent; it is never split. After
        bounded retries of throttling/conflicting transactions it raises `StoreError`, and
        because the transaction is atomic nothing of it is stored.
        """
        if not writes:
            return
        _check_writes(writes)
        previous = self._previous_state(writes)
        now = self._clock.now()
        plan = _Plan()
        for write in writes:
            self._plan_write(plan, write, previous.get((write.memory.tenant_id, write.memory.id)), now)
        new_tenants = {w.memory.tenant_id for w in writes} - self._registered
        for tenant_id in sorted(new_tenants):
            plan.add(self._register_action(tenant_id, now), None)
        plan.check_limits(len(writes))
        try:
            self._transact(plan.items)
        except _TransactionCancelledError as cancelled:
            raise _conflict(plan, cancelled.reasons) from cancelled
        self._registered |= new_tenants

    def _previous_state(self, writes: Sequence[StoreWrite]) -> dict[tuple[str, str], dict[str, Any]]:
        """Current lookup-relevant state of the memories being updated; ConflictError if stale.

        The transaction re-checks `version`, so this read is exactly the state it replaces.
        """
        updates = [w for w in writes if w.expected_version is not None]
        if not updates:
            return {}
        keys = [(w.memory.tenant_id, w.memory.id) for w in updates]
        projection = (
            "id",
            "tenant_id",
            "version",
            "status",
            "scope_key",
            "content_hash",
            "idempotency_key",
            "expires_iso",
        )
        found = {
            (str(_from_attr(item["tenant_id"])), str(_from_attr(item["id"]))): {
                k: _from_attr(v) for k, v in item.items()
            }
            for item in self._batch_get(keys, projection)
            if "id" in item and "tenant_id" in item
        }
        for write in updates:
            current = found.get((write.memory.tenant_id, write.memory.id))
            actual = int(current["version"]) if current is not None else None
            if actual != write.expected_version:
                raise ConflictError(write.memory.id, write.expected_version, actual)
        return found

    def _plan_write(self, plan: _Plan, write: StoreWrite, old: dict[str, Any] | None, now: datetime) -> None:
        memory = write.memory
        item = memory_to_item(memory)
        _check_size("memory", item, f"memory {memory.id} (content is {len(memory.content)} characters)")
        plan.add({"Put": self._put_memory_action(item, write)}, write, item)
        if write.event is not None:
            event_item = _event_item(memory, write.event)
            _check_size("event", event_item, f"history event {write.event.id}")
            plan.add({"Put": {"TableName": self._table, "Item": event_item}}, write, event_item)
        self._plan_hash_lookup(plan, write, old)
        self._plan_idempotency(plan, write, old, now)

    def _put_memory_action(self, item: Item, write: StoreWrite) -> Any:
        expr = _Expr()
        if write.expected_version is None:
            memory_is_new = f"attribute_not_exists({expr.n('pk')})"
            condition = memory_is_new
        else:
            version_matches = f"{expr.n('version')} = {expr.v(_n(write.expected_version))}"
            condition = version_matches
        action: dict[str, Any] = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": expr.names,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if expr.values:
            action["ExpressionAttributeValues"] = expr.values
        return action

    def _plan_hash_lookup(self, plan: _Plan, write: StoreWrite, old: dict[str, Any] | None) -> None:
        memory = write.memory
        new_key = (memory.scope_key, memory.content_hash) if memory.status is MemoryStatus.ACTIVE else None
        old_key = None
        if old is not None and old.get("status") == MemoryStatus.ACTIVE.value:
            old_key = (str(old.get("scope_key")), str(old.get("content_hash")))
        sk = _s("M#" + _part(memory.id))
        if old_key is not None and old_key != new_key:
            delete_key = {"pk": _s(_hash_pk(memory.tenant_id, *old_key)), "sk": sk}
            plan.add({"Delete": {"TableName": self._table, "Key": delete_key}}, write)
        unchanged = (
            old is not None and old_key == new_key and old.get("expires_iso") == _opt_ts(memory.expires_at)
        )
        if new_key is not None and not unchanged:
            lookup: Item = {
                "pk": _s(_hash_pk(memory.tenant_id, *new_key)),
                "sk": sk,
                "item_type": _s("hash_lookup"),
                "memory_id": _s(memory.id),
                **_expiry_attrs(memory.expires_at),
            }
            plan.add({"Put": {"TableName": self._table, "Item": lookup}}, write, lookup)

    def _plan_idempotency(
        self, plan: _Plan, write: StoreWrite, old: dict[str, Any] | None, now: datetime
    ) -> None:
        memory = write.memory
        old_key = old.get("idempotency_key") if old is not None else None
        if old_key is not None and old_key != memory.idempotency_key:
            stale = {"pk": _s(_idem_pk(memory.tenant_id, str(old_key))), "sk": _s(_IDEM_SK)}
            plan.add({"Delete": {"TableName": self._table, "Key": stale}}, write)
        if memory.idempotency_key is None:
            return
        if (
            old is not None
            and old_key == memory.idempotency_key
            and old.get("expires_iso") == _opt_ts(memory.expires_at)
        ):
            return
        item: Item = {
            "pk": _s(_idem_pk(memory.tenant_id, memory.idempotency_key)),
            "sk": _s(_IDEM_SK),
            "item_type": _s("idempotency_key"),
            "memory_id": _s(memory.id),
            **_expiry_attrs(memory.expires_at),
        }
        expr = _Expr()
        key_is_free = f"attribute_not_exists({expr.n('pk')})"
        key_is_ours = f"{expr.n('memory_id')} = {expr.s(memory.id)}"
        owner_expired = f"{expr.n('expires_iso')} <= {expr.s(_ts(now))}"
        action: Any = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": f"{key_is_free} OR {key_is_ours} OR {owner_expired}",
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
        }
        plan.add({"Put": action}, write, item)

    def _register_action(self, tenant_id: str, now: datetime) -> TransactWriteItemTypeDef:
        expr = _Expr()
        first_seen = expr.n("first_seen")
        update = (
            f"SET {expr.n('tenant_id')} = {expr.s(tenant_id)}, "
            f"{first_seen} = if_not_exists({first_seen}, {expr.s(_ts(now))})"
        )
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": _s(_REGISTRY_PK), "sk": _s(tenant_id)},
                "UpdateExpression": update,
                "ExpressionAttributeNames": expr.names,
                "ExpressionAttributeValues": expr.values,
            }
        }

    def _transact(self, items: list[TransactWriteItemTypeDef]) -> None:
        """TransactWriteItems with bounded retries; `_TransactionCancelledError` on a failed condition.

        One client request token for every attempt makes a retry of a transaction that did
        land (but whose answer was lost) a no-op instead of a second write.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        token = uuid.uuid4().hex
        for attempt in range(self._retry.max_attempts):
            try:
                self._client.transact_write_items(TransactItems=items, ClientRequestToken=token)
                return
            except ClientError as exc:
                reasons: builtins.list[dict[str, Any]] = [
                    dict(r) for r in exc.response.get("CancellationReasons", [])
                ]
                codes = {str(r.get("Code", "None")) for r in reasons}
                if "ConditionalCheckFailed" in codes:
                    raise _TransactionCancelledError(reasons) from exc
                if not _retryable(_error_code(exc), codes) or attempt + 1 == self._retry.max_attempts:
                    raise _store_error("TransactWriteItems", exc) from exc
            except BotoCoreError as exc:
                raise _store_error("TransactWriteItems", exc) from exc
            self._retry.backoff(attempt)

    def touch(self, tenant_id: str, touches: Sequence[Touch]) -> None:
        """Set strength, last access and access count; no version bump, no history.

        Memories that no longer exist are skipped (never re-created). Each chunk of up to 100
        touches is one transaction; `StoreError` if the backend keeps failing.
        """
        latest = {t.memory_id: t for t in touches}
        pending = list(latest.values())
        for start in range(0, len(pending), MAX_TRANSACTION_ITEMS):
            self._touch_chunk(tenant_id, pending[start : start + MAX_TRANSACTION_ITEMS])

    def _touch_chunk(self, tenant_id: str, touches: list[Touch]) -> None:
        actions = [self._touch_action(tenant_id, t) for t in touches]
        while actions:
            try:
                self._transact(actions)
                return
            except _TransactionCancelledError as cancelled:
                missing = {
                    i for i, r in enumerate(cancelled.reasons) if r.get("Code") == "ConditionalCheckFailed"
                }
                actions = [a for i, a in enumerate(actions) if i not in missing]

    def _touch_action(self, tenant_id: str, touch: Touch) -> TransactWriteItemTypeDef:
        expr = _Expr()
        memory_exists = f"attribute_exists({expr.n('pk')})"
        update = (
            f"SET {expr.n('strength')} = {expr.v(_n(touch.strength))}, "
            f"{expr.n('last_accessed_at')} = {expr.s(_ts(touch.last_accessed_at))}, "
            f"{expr.n('access_count')} = {expr.v(_n(touch.access_count))}"
        )
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"pk": _s(_memory_pk(tenant_id, touch.memory_id)), "sk": _s(_MEMORY_SK)},
                "UpdateExpression": update,
                "ConditionExpression": memory_exists,
                "ExpressionAttributeNames": expr.names,
                "ExpressionAttributeValues": expr.values,
            }
        }

    def purge(self, tenant_id: str, memory_id: str) -> None:
        """Delete the memory, its history, its hash lookup and its idempotency key. Idempotent.

        Not atomic: the memory item goes last, so a purge interrupted by `StoreError` can simply
        be repeated to finish (the memory item still names the lookups to remove).
        """
        pk = _memory_pk(tenant_id, memory_id)
        collection = list(self._query_all(self._collection_query(pk)))
        memory_item = next((i for i in collection if _from_attr(i["sk"]) == _MEMORY_SK), None)
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in collection if i is not memory_item]
        if memory_item is not None:
            stored = memory_from_item(memory_item)
            lookup_sk = _s("M#" + _part(memory_id))
            keys.append(
                {"pk": _s(_hash_pk(tenant_id, stored.scope_key, stored.content_hash)), "sk": lookup_sk}
            )
            if stored.idempotency_key is not None:
                self._delete_idempotency_key(tenant_id, stored.idempotency_key, memory_id)
        self._batch_delete(keys)
        if memory_item is not None:
            self._batch_delete([{"pk": memory_item["pk"], "sk": memory_item["sk"]}])

    def _delete_idempotency_key(self, tenant_id: str, key: str, memory_id: str) -> None:
        from botocore.exceptions import ClientError

        expr = _Expr()
        key_is_ours = f"{expr.n('memory_id')} = {expr.s(memory_id)}"
        try:
            self._client.delete_item(
                TableName=self._table,
                Key={"pk": _s(_idem_pk(tenant_id, key)), "sk": _s(_IDEM_SK)},
                ConditionExpression=key_is_ours,
                ExpressionAttributeNames=expr.names,
                ExpressionAttributeValues=expr.values,
            )
        except ClientError as exc:
            if _error_code(exc) != "ConditionalCheckFailedException":
                raise _store_error("DeleteItem", exc) from exc

    # ------------------------------------------------------------------ reads

    def get(self, tenant_id: str, memory_id: str) -> Memory | None:
        """The memory (strongly consistent read), or None if absent or past `expires_at`."""
        item = self._get_item(_memory_pk(tenant_id, memory_id), _MEMORY_SK)
        return self._live(tenant_id, item) if item is not None else None

    def get_many(self, tenant_id: str, memory_ids: Sequence[str]) -> builtins.list[Memory]:
        """Existing, unexpired memories among `memory_ids` (BatchGetItem, unprocessed keys retried)."""
        keys = [(tenant_id, memory_id) for memory_id in dict.fromkeys(memory_ids)]
        found = (self._live(tenant_id, item) for item in self._batch_get(keys, None))
        return [m for m in found if m is not None]

    def find_by_hash(self, tenant_id: str, scope_key: str, content_hash: str) -> Memory | None:
        """The active, unexpired memory with this content hash in this dedup scope (newest if several)."""
        query: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": _s(_hash_pk(tenant_id, scope_key, content_hash))},
            "ConsistentRead": True,
        }
        ids = [str(_from_attr(item["memory_id"])) for item in self._query_all(query) if "memory_id" in item]
        candidates = [
            m
            for m in self.get_many(tenant_id, ids)
            if m.status is MemoryStatus.ACTIVE and m.content_hash == content_hash and m.scope_key == scope_key
        ]
        return max(candidates, key=lambda m: (m.updated_at, m.id), default=None)

    def find_by_idempotency_key(self, tenant_id: str, key: str) -> Memory | None:
        """The unexpired memory first written with this idempotency key, if any."""
        item = self._get_item(_idem_pk(tenant_id, key), _IDEM_SK)
        if item is None or "memory_id" not in item:
            return None
        memory = self.get(tenant_id, str(_from_attr(item["memory_id"])))
        return memory if memory is not None and memory.idempotency_key == key else None

    def history(self, tenant_id: str, memory_id: str) -> builtins.list[HistoryEvent]:
        """The memory's events, oldest first (by version, then event id); empty once purged."""
        query = self._collection_query(_memory_pk(tenant_id, memory_id), history_only=True)
        return [HistoryEvent.model_validate_json(str(_from_attr(i["event"]))) for i in self._query_all(query)]

    def list(self, tenant_id: str, filter: MemoryFilter, cursor: str | None = None, limit: int = 100) -> Page:
        """Memories matching `filter` (exactly `MemoryFilter.matches`), newest `updated_at` first.

        Every criterion is applied inside the Query (key condition or FilterExpression); pages are
        full (`limit` items) unless the listing is exhausted, and then `cursor` is None.
        """
        if limit < 1:
            raise InvalidInputError("limit", f"must be at least 1 (got {limit})")
        after = _decode_cursor(cursor)
        if not filter.statuses or filter.types == ():
            return Page(items=[])
        index, partitions, covered = _plan_listing(tenant_id, filter)
        expr = _Expr()
        conditions = _filter_conditions(expr, filter, covered, self._clock.now())
        page_size = min(_MAX_QUERY_PAGE, max(10, (limit + 1) // len(partitions) + 2))
        streams = [
            self._stream(
                self._index_query(index, pk_attr, pk, "updated_key", after, expr, conditions), page_size
            )
            for pk_attr, pk in partitions
        ]
        merged = heapq.merge(*streams, key=lambda item: str(item["updated_key"]["S"]), reverse=True)
        items = list(itertools.islice(merged, limit + 1))
        page = [memory_from_item(item) for item in items[:limit]]
        more = len(items) > limit
        return Page(
            items=page, cursor=_encode_cursor(str(items[limit - 1]["updated_key"]["S"])) if more else None
        )

    def page_by_created(
        self,
        tenant_id: str,
        status: MemoryStatus = MemoryStatus.ACTIVE,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Page:
        """Unexpired memories with `status`, oldest `created_at` first: for lifecycle jobs.

        The order does not change when memories are updated, so a job can checkpoint the cursor
        and resume without skipping or repeating a memory. Not part of the `MemoryStore` port.
        """
        if limit < 1:
            raise InvalidInputError("limit", f"must be at least 1 (got {limit})")
        after = _decode_cursor(cursor)
        expr = _Expr()
        conditions = {"not_expired": _not_expired(expr, self._clock.now())}
        query = self._index_query(
            GSI_STATUS_CREATED,
            "gsi4pk",
            _status_pk(tenant_id, status),
            "created_key",
            after,
            expr,
            conditions,
        )
        query["ScanIndexForward"] = True
        items = list(itertools.islice(self._stream(query, min(_MAX_QUERY_PAGE, limit + 1)), limit + 1))
        page = [memory_from_item(item) for item in items[:limit]]
        more = len(items) > limit
        return Page(
            items=page, cursor=_encode_cursor(str(items[limit - 1]["created_key"]["S"])) if more else None
        )

    def stats(self, tenant_id: str) -> StoreStats:
        """Counts of unexpired memories by type and status, oldest/newest `created_at`.

        One paged Query of the tenant's partition of `gsi1_tenant_updated` (reads every memory of
        the tenant, never another tenant's; no Scan).
        """
        expr = _Expr()
        query: QueryInputTypeDef = {
            "TableName": self._table,
            "IndexName": GSI_TENANT,
            "KeyConditionExpression": f"{expr.n('gsi1pk')} = {expr.s(_tenant_pk(tenant_id))}",
            "FilterExpression": _not_expired(expr, self._clock.now()),
            "ProjectionExpression": ", ".join(expr.n(a) for a in ("type", "status", "created_at")),
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
        }
        by_type: dict[str, int] = {}
        by_status: dict[str, int] = {}
        created: list[str] = []
        for item in self._query_all(query):
            by_type[str(_from_attr(item["type"]))] = by_type.get(str(_from_attr(item["type"])), 0) + 1
            by_status[str(_from_attr(item["status"]))] = by_status.get(str(_from_attr(item["status"])), 0) + 1
            created.append(str(_from_attr(item["created_at"])))
        return StoreStats(
            total=len(created),
            by_type=by_type,
            by_status=by_status,
            oldest=datetime.fromisoformat(min(created)) if created else None,
            newest=datetime.fromisoformat(max(created)) if created else None,
        )

    def tenants(self) -> builtins.list[str]:
        """Every tenant that has committed a memory (from the registry items; a Query, not a Scan)."""
        query: QueryInputTypeDef = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": "pk"},
            "ExpressionAttributeValues": {":pk": _s(_REGISTRY_PK)},
        }
        return sorted(str(_from_attr(item["tenant_id"])) for item in self._query_all(query))

    # ------------------------------------------------------------------ helpers

    def _live(self, tenant_id: str, item: Mapping[str, Any]) -> Memory | None:
        memory = memory_from_item(item)
        if memory.tenant_id != tenant_id or memory.is_expired(self._clock.now()):
            return None
        return memory

    def _collection_query(self, pk: str, *, history_only: bool = False) -> QueryInputTypeDef:
        expr = _Expr()
        condition = f"{expr.n('pk')} = {expr.s(pk)}"
        if history_only:
            condition += f" AND begins_with({expr.n('sk')}, {expr.s(_HISTORY_PREFIX)})"
        return {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
            "ConsistentRead": True,
        }

    def _index_query(
        self,
        index: str,
        pk_attr: str,
        pk: str,
        sort_attr: str,
        after: str | None,
        expr: _Expr,
        conditions: Mapping[str, str],
    ) -> QueryInputTypeDef:
        """A Query of one index partition (descending unless changed), resuming past `after`."""
        key_names = {"#ipk": pk_attr}
        key_values: dict[str, AttributeValueTypeDef] = {":ipk": _s(pk)}
        key_condition = "#ipk = :ipk"
        if after is not None:
            # Past `after` in the query's direction: `<` newest-first, `>` oldest-first.
            key_condition += " AND #isk < :after" if sort_attr == "updated_key" else " AND #isk > :after"
            key_names["#isk"] = sort_attr
            key_values[":after"] = _s(after)
        return {
            "TableName": self._table,
            "IndexName": index,
            "KeyConditionExpression": key_condition,
            "FilterExpression": _all_of(conditions),
            "ExpressionAttributeNames": {**expr.names, **key_names},
            "ExpressionAttributeValues": {**expr.values, **key_values},
            "ScanIndexForward": False,
        }

    def _stream(self, query: QueryInputTypeDef, page_size: int) -> Iterator[Item]:
        """Items of a Query, fetched lazily; page sizes double so filtered queries converge fast."""
        params = dict(query)
        while True:
            params["Limit"] = page_size
            out = self._call("Query", self._client.query, **params)
            yield from out["Items"]
            last = out.get("LastEvaluatedKey")
            if not last:
                return
            params["ExclusiveStartKey"] = last
            page_size = min(_MAX_QUERY_PAGE, page_size * 2)

    def _query_all(self, query: QueryInputTypeDef) -> Iterator[Item]:
        params = dict(query)
        while True:
            out = self._call("Query", self._client.query, **params)
            yield from out["Items"]
            last = out.get("LastEvaluatedKey")
            if not last:
                return
            params["ExclusiveStartKey"] = last

    def _batch_get(self, keys: Sequence[tuple[str, str]], projection: Sequence[str] | None) -> Iterator[Item]:
        """Memory items for (tenant, id) keys: BatchGetItem by 100, unprocessed keys retried."""
        for start in range(0, len(keys), _BATCH_GET_MAX):
            request: KeysAndAttributesTypeDef = {
                "Keys": [
                    {"pk": _s(_memory_pk(t, m)), "sk": _s(_MEMORY_SK)} for t, m in keys[start : start + 100]
                ],
                "ConsistentRead": True,
            }
            if projection is not None:
                expr = _Expr()
                request["ProjectionExpression"] = ", ".join(expr.n(a) for a in projection)
                request["ExpressionAttributeNames"] = expr.names
            yield from self._batch_get_chunk(request)

    def _batch_get_chunk(self, request: KeysAndAttributesTypeDef) -> Iterator[Item]:
        pending: KeysAndAttributesTypeDef | None = request
        for attempt in range(self._retry.max_attempts):
            if pending is None:
                return
            out = self._call("BatchGetItem", self._client.batch_get_item, RequestItems={self._table: pending})
            yield from out.get("Responses", {}).get(self._table, [])
            unprocessed = out.get("UnprocessedKeys", {}).get(self._table)
            pending = (
                {**request, "Keys": unprocessed["Keys"]} if unprocessed and unprocessed["Keys"] else None
            )
            if pending is not None and attempt + 1 < self._retry.max_attempts:
                self._retry.backoff(attempt)
        if pending is not None:
            raise StoreError(
                f"DynamoDB BatchGetItem left keys unprocessed after {self._retry.max_attempts} attempts"
            )

    def _batch_delete(self, keys: Sequence[Mapping[str, AttributeValueTypeDef]]) -> None:
        for start in range(0, len(keys), _BATCH_WRITE_MAX):
            requests: list[WriteRequestTypeDef] = [
                {"DeleteRequest": {"Key": key}} for key in keys[start : start + _BATCH_WRITE_MAX]
            ]
            self._batch_delete_requests(requests)

    def _batch_delete_requests(self, requests: builtins.list[WriteRequestTypeDef]) -> None:
        pending = requests
        for attempt in range(self._retry.max_attempts):
            out = self._call(
                "BatchWriteItem", self._client.batch_write_item, RequestItems={self._table: pending}
            )
            pending = [
                {"DeleteRequest": {"Key": r["DeleteRequest"]["Key"]}}
                for r in out.get("UnprocessedItems", {}).get(self._table, [])
                if "DeleteRequest" in r
            ]
            if not pending:
                return
            if attempt + 1 < self._retry.max_attempts:
                self._retry.backoff(attempt)
        raise StoreError(
            f"DynamoDB BatchWriteItem left items unprocessed after {self._retry.max_attempts} attempts"
        )


# --------------------------------------------------------------------------- module helpers


def _create_client() -> DynamoDBClient:
    import boto3
    from botocore.config import Config

    return boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _opt_ts(when: datetime | None) -> str | None:
    return None if when is None else _ts(when)


def _check_writes(writes: Sequence[StoreWrite]) -> None:
    seen: set[tuple[str, str]] = set()
    for write in writes:
        key = (write.memory.tenant_id, write.memory.id)
        if key in seen:
            raise InvalidInputError("writes", f"memory {write.memory.id} appears twice in one commit")
        seen.add(key)
        event = write.event
        if event is not None and (event.memory_id, event.tenant_id) != (
            write.memory.id,
            write.memory.tenant_id,
        ):
            raise InvalidInputError("event", f"event {event.id} does not belong to memory {write.memory.id}")


def _check_size(field: str, item: Item, what: str) -> None:
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise InvalidInputError(
            field, f"{what} would be a {size}-byte DynamoDB item; the limit is {MAX_ITEM_BYTES} bytes"
        )


def _event_item(memory: Memory, event: HistoryEvent) -> Item:
    return {
        "pk": _s(_memory_pk(memory.tenant_id, memory.id)),
        "sk": _s(f"{_HISTORY_PREFIX}{memory.version:010d}#{_part(event.id)}"),
        "item_type": _s("history_event"),
        "event": _s(event.model_dump_json()),
    }


def _retryable(code: str, reasons: set[str]) -> bool:
    if code in _THROTTLE_CODES:
        return True
    return code == "TransactionCanceledException" and bool(reasons & _RETRYABLE_REASONS)


def _conflict(plan: _Plan, reasons: list[dict[str, Any]]) -> ConflictError:
    """The ConflictError for the first write whose condition failed (with the version found)."""
    for index, reason in enumerate(reasons):
        if reason.get("Code") != "ConditionalCheckFailed" or index >= len(plan.owners):
            continue
        owner = plan.owners[index]
        if owner is None:
            continue
        old = reason.get("Item") or {}
        actual = int(_from_attr(old["version"])) if "version" in old else None
        return ConflictError(owner.memory.id, owner.expected_version, actual)
    return ConflictError("?", None)


def _plan_listing(tenant_id: str, filter: MemoryFilter) -> tuple[str, list[tuple[str, str]], frozenset[str]]:
    """(index, [(partition key attribute, value)], criteria the partitions already enforce)."""
    if filter.session_id is not None:
        return GSI_SESSION, [("gsi2pk", _session_pk(tenant_id, filter.session_id))], frozenset({"session"})
    types = filter.types if filter.types is not None else tuple(MemoryType)
    statuses = tuple(dict.fromkeys(filter.statuses))
    narrowing = filter.types is not None or set(statuses) != set(MemoryStatus)
    if narrowing and len(types) * len(statuses) <= _MAX_MERGED_PARTITIONS:
        partitions = [
            ("gsi3pk", _type_status_pk(tenant_id, t, s)) for t in dict.fromkeys(types) for s in statuses
        ]
        return GSI_TYPE_STATUS, partitions, frozenset({"types", "statuses"})
    return GSI_TENANT, [("gsi1pk", _tenant_pk(tenant_id))], frozenset()


def _filter_conditions(
    expr: _Expr, filter: MemoryFilter, covered: frozenset[str], now: datetime
) -> dict[str, str]:
    """Every `MemoryFilter.matches` criterion the index keys do not already enforce, by name."""
    conditions = {"not_expired": _not_expired(expr, now)}
    if filter.agent_id is not None:
        shared = f"{expr.n('visibility')} = {expr.s('shared')}"
        own = f"{expr.n('agent_id')} = {expr.s(filter.agent_id)}"
        conditions["visible_to_agent"] = f"{shared} OR {own}"
    if filter.session_id is not None and "session" not in covered:
        conditions["in_session"] = f"{expr.n('session_id')} = {expr.s(filter.session_id)}"
    if "types" not in covered and filter.types is not None:
        conditions["of_type"] = expr.one_of("type", (t.value for t in filter.types))
    if "statuses" not in covered:
        conditions["in_status"] = expr.one_of("status", (s.value for s in filter.statuses))
    conditions.update(_content_conditions(expr, filter))
    return conditions


def _content_conditions(expr: _Expr, filter: MemoryFilter) -> dict[str, str]:
    conditions: dict[str, str] = {}
    for position, tag in enumerate(dict.fromkeys(filter.tags or ())):
        conditions[f"has_tag_{position}"] = f"contains({expr.n('tags')}, {expr.s(tag)})"
    if filter.time_from is not None:
        conditions["event_not_before"] = f"{expr.n('event_time')} >= {expr.s(_ts(filter.time_from))}"
    if filter.time_to is not None:
        conditions["event_not_after"] = f"{expr.n('event_time')} <= {expr.s(_ts(filter.time_to))}"
    if filter.scope_key is not None:
        conditions["in_scope"] = f"{expr.n('scope_key')} = {expr.s(filter.scope_key)}"
    return conditions


# --------------------------------------------------------------------------- schema


def _gsi(name: str, pk: str, sk: str) -> GlobalSecondaryIndexTypeDef:
    return {
        "IndexName": name,
        "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    }


def table_definition(table_name: str) -> CreateTableInputTypeDef:
    """CreateTable arguments equal to `template.yaml`'s `MemoryTable` (a test keeps them equal)."""
    attributes = ("pk", "sk", "gsi1pk", "gsi2pk", "gsi3pk", "gsi4pk", "updated_key", "created_key")
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attributes],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            _gsi(GSI_TENANT, "gsi1pk", "updated_key"),
            _gsi(GSI_SESSION, "gsi2pk", "updated_key"),
            _gsi(GSI_TYPE_STATUS, "gsi3pk", "updated_key"),
            _gsi(GSI_STATUS_CREATED, "gsi4pk", "created_key"),
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "SSESpecification": {"Enabled": True},
    }
