"""The transaction of one `commit`: the actions each write needs and what a cancelled one means.

Besides the memory item (guarded by `version`) and its history event, a write keeps its due
item (`due`: the memory's place in the lifecycle due orders) and two lookup items in step with
the memory:

- content-hash lookup (`T#<tenant>#HASH#<scope_key>#<hash>` / `M#<id>`): `memory_id`,
  `expires_at`; it exists exactly while the memory is `active` with that hash in that scope
  (exact dedup, strongly consistent);
- idempotency key (`T#<tenant>#IDEM#<key>` / `IDEM`): `memory_id`, `expires_at`,
  `expires_iso`; first writer wins, until its memory expires.

The first commit a process makes for a tenant also adds the tenant to the registry
(`REGISTRY#TENANTS` / `<tenant>`: `tenant_id`, `first_seen`), an idempotent update, so
`tenants()` is a Query of one small partition, never a Scan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.due_order import DUE_STATUSES
from rearview.backends.dynamodb.codec import (
    check_item_size,
    event_to_item,
    expiry_attributes,
    item_size,
    memory_to_item,
    number_value,
    python_value,
    string_value,
)
from rearview.backends.dynamodb.due import due_item, due_key_of
from rearview.backends.dynamodb.expressions import Expression
from rearview.backends.dynamodb.keys import (
    IDEMPOTENCY_SK,
    REGISTRY_PK,
    hash_lookup_pk,
    hash_lookup_sk,
    idempotency_pk,
    optional_sortable_time,
    sortable_time,
)
from rearview.errors import ConflictError, InvalidInputError, StoreError
from rearview.models import MemoryStatus
from rearview.ports import StoreWrite

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

    Item = dict[str, AttributeValueTypeDef]

MAX_TRANSACTION_ITEMS: Final = 100
"""TransactWriteItems accepts at most 100 actions; a larger commit is refused, never split."""
MAX_TRANSACTION_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StoredState:
    """What a commit needs to know of the memory it replaces: its version and its lookup items."""

    version: int
    status: str
    scope_key: str
    content_hash: str
    idempotency_key: str | None = None
    expires_iso: str | None = None

    @classmethod
    def attributes(cls) -> tuple[str, ...]:
        """The attributes to read (the projection of the pre-read)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> StoredState:
        values = {name: python_value(item[name]) for name in cls.attributes() if name in item}
        return cls(**values)

    @property
    def hash_lookup(self) -> tuple[str, str] | None:
        """(scope_key, content_hash) of the lookup item this state owns (only while active)."""
        return (self.scope_key, self.content_hash) if self.status == MemoryStatus.ACTIVE.value else None


@dataclass(slots=True)
class CommitPlan:
    """The transaction for one commit: its actions and which write each action belongs to."""

    table: str
    actions: list[TransactWriteItemTypeDef] = field(default_factory=list)
    owners: list[StoreWrite | None] = field(default_factory=list)
    bytes: int = 0

    def add(
        self, action: TransactWriteItemTypeDef, owner: StoreWrite | None, item: Item | None = None
    ) -> None:
        self.actions.append(action)
        self.owners.append(owner)
        if item is not None:
            self.bytes += item_size(item)

    def check_limits(self, writes: int) -> None:
        """`InvalidInputError` when the transaction is past DynamoDB's limits (it is never split)."""
        if len(self.actions) > MAX_TRANSACTION_ITEMS:
            raise InvalidInputError(
                "writes",
                f"this commit of {writes} memories needs {len(self.actions)} DynamoDB transaction actions; "
                f"the limit is {MAX_TRANSACTION_ITEMS} (commit fewer memories at once; it is never split)",
            )
        if self.bytes > MAX_TRANSACTION_BYTES:
            raise InvalidInputError(
                "writes", f"this commit is {self.bytes} bytes; DynamoDB transactions hold 4 MB"
            )

    def add_write(self, write: StoreWrite, old: StoredState | None, now: datetime) -> None:
        """The memory, its history event and its lookup items; `old` is the state it replaces."""
        memory = write.memory
        item = memory_to_item(memory)
        check_item_size("memory", item, f"memory {memory.id} (content is {len(memory.content)} characters)")
        self.add({"Put": self._put_memory(item, write)}, write, item)
        self._add_due_item(write, old)
        if write.event is not None:
            event_item = event_to_item(memory, write.event)
            check_item_size("event", event_item, f"history event {write.event.id}")
            self.add({"Put": {"TableName": self.table, "Item": event_item}}, write, event_item)
        self._add_hash_lookup(write, old)
        self._add_idempotency_key(write, old, now)

    def _add_due_item(self, write: StoreWrite, old: StoredState | None) -> None:
        """Put the memory's due item (its version, due at its write), or delete it when it cannot be due."""
        item = due_item(write.memory)
        if item is not None:
            self.add({"Put": {"TableName": self.table, "Item": item}}, write, item)
        elif old is not None and old.status in {s.value for s in DUE_STATUSES}:
            key = due_key_of(write.memory.tenant_id, write.memory.id)
            self.add({"Delete": {"TableName": self.table, "Key": key}}, write)

    def _put_memory(self, item: Item, write: StoreWrite) -> Any:
        expr = Expression()
        if write.expected_version is None:
            memory_is_new = f"attribute_not_exists({expr.name('pk')})"
            condition = memory_is_new
        else:
            version_matches = f"{expr.name('version')} = {expr.value(number_value(write.expected_version))}"
            condition = version_matches
        action: dict[str, Any] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": expr.names,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if expr.values:
            action["ExpressionAttributeValues"] = expr.values
        return action

    def _add_hash_lookup(self, write: StoreWrite, old: StoredState | None) -> None:
        memory = write.memory
        new_key = (memory.scope_key, memory.content_hash) if memory.status is MemoryStatus.ACTIVE else None
        old_key = old.hash_lookup if old is not None else None
        sk = string_value(hash_lookup_sk(memory.id))
        if old_key is not None and old_key != new_key:
            stale = {"pk": string_value(hash_lookup_pk(memory.tenant_id, *old_key)), "sk": sk}
            self.add({"Delete": {"TableName": self.table, "Key": stale}}, write)
        unchanged = (
            old is not None
            and old_key == new_key
            and old.expires_iso == optional_sortable_time(memory.expires_at)
        )
        if new_key is None or unchanged:
            return
        lookup: Item = {
            "pk": string_value(hash_lookup_pk(memory.tenant_id, *new_key)),
            "sk": sk,
            "item_type": string_value("hash_lookup"),
            "memory_id": string_value(memory.id),
            **expiry_attributes(memory.expires_at),
        }
        self.add({"Put": {"TableName": self.table, "Item": lookup}}, write, lookup)

    def _add_idempotency_key(self, write: StoreWrite, old: StoredState | None, now: datetime) -> None:
        memory = write.memory
        old_key = old.idempotency_key if old is not None else None
        if old_key is not None and old_key != memory.idempotency_key:
            stale = {
                "pk": string_value(idempotency_pk(memory.tenant_id, old_key)),
                "sk": string_value(IDEMPOTENCY_SK),
            }
            self.add({"Delete": {"TableName": self.table, "Key": stale}}, write)
        if memory.idempotency_key is None:
            return
        unchanged = (
            old is not None
            and old_key == memory.idempotency_key
            and old.expires_iso == optional_sortable_time(memory.expires_at)
        )
        if unchanged:
            return
        item: Item = {
            "pk": string_value(idempotency_pk(memory.tenant_id, memory.idempotency_key)),
            "sk": string_value(IDEMPOTENCY_SK),
            "item_type": string_value("idempotency_key"),
            "memory_id": string_value(memory.id),
            **expiry_attributes(memory.expires_at),
        }
        expr = Expression()
        key_is_free = f"attribute_not_exists({expr.name('pk')})"
        key_is_ours = f"{expr.name('memory_id')} = {expr.string(memory.id)}"
        owner_expired = f"{expr.name('expires_iso')} <= {expr.string(sortable_time(now))}"
        action: Any = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": f"{key_is_free} OR {key_is_ours} OR {owner_expired}",
            "ExpressionAttributeNames": expr.names,
            "ExpressionAttributeValues": expr.values,
        }
        self.add({"Put": action}, write, item)

    def add_tenant_registration(self, tenant_id: str, now: datetime) -> None:
        """Record the tenant in the registry (keeps the first `first_seen`)."""
        expr = Expression()
        first_seen = expr.name("first_seen")
        update = (
            f"SET {expr.name('tenant_id')} = {expr.string(tenant_id)}, "
            f"{first_seen} = if_not_exists({first_seen}, {expr.string(sortable_time(now))})"
        )
        key = {"pk": string_value(REGISTRY_PK), "sk": string_value(tenant_id)}
        self.add(
            {
                "Update": {
                    "TableName": self.table,
                    "Key": key,
                    "UpdateExpression": update,
                    "ExpressionAttributeNames": expr.names,
                    "ExpressionAttributeValues": expr.values,
                }
            },
            None,
        )

    def commit_error(self, reasons: Sequence[Mapping[str, Any]]) -> ConflictError | StoreError:
        """The error for a transaction cancelled by a condition: the first failed write's conflict.

        Every conditional action belongs to a write, so a failed condition owned by none means
        DynamoDB's answer and this plan disagree: a `StoreError`, never a made-up conflict.
        """
        for index, reason in enumerate(reasons):
            owner = self.owners[index] if index < len(self.owners) else None
            if reason.get("Code") != "ConditionalCheckFailed" or owner is None:
                continue
            old = reason.get("Item") or {}
            actual = int(python_value(old["version"])) if "version" in old else None
            return ConflictError(owner.memory.id, owner.expected_version, actual)
        codes = [str(reason.get("Code")) for reason in reasons]
        return StoreError(f"DynamoDB cancelled a commit on a condition no write owns (reasons {codes})")


def check_writes(writes: Sequence[StoreWrite]) -> None:
    """`InvalidInputError` for a memory written twice, or an event that is not its memory's."""
    seen: set[tuple[str, str]] = set()
    for write in writes:
        key = (write.memory.tenant_id, write.memory.id)
        if key in seen:
            raise InvalidInputError("writes", f"memory {write.memory.id} appears twice in one commit")
        seen.add(key)
        event = write.event
        if event is not None and (event.tenant_id, event.memory_id) != key:
            raise InvalidInputError("event", f"event {event.id} does not belong to memory {write.memory.id}")
