"""Recall bookkeeping on a small item of its own, so that a search's reinforcement is one small write.

A recall (`MemoryStore.touch`) sets a memory's strength, last recall and recall count. Written on
the memory item, it rewrote the whole item inside a transaction (2 write units per KB) and, since
the three listing GSIs project every attribute, each of their entries too (1 per KB each): about
10 units for a 1 KB memory, 20 for a 3.5 KB one, on every search. Instead each memory has at most
one recall item beside it, in its own item collection:

| item | `pk` | `sk` | attributes |
|---|---|---|---|
| recall | `T#<tenant>#M#<id>` | `RECALL` | `item_type`, `strength`, `last_accessed_at`, `access_count` |

It carries no GSI key, so no index copies it, and it is far under 1 KB: a touch is one standard
write unit whatever the memory's size. The memory item keeps its own copy of the three fields as
of its last commit (a commit writes what its writer read, recalls included). A read merges the two
(`merged`): the later recall wins, by (`last_accessed_at`, `access_count`), so a commit built from
a read taken before a recall does not erase that recall. Items written before recall items existed
simply have none: they read as they were stored.

Writes (`record`): one conditional UpdateItem per touch that only moves the recall forward (a
touch older than the one recorded changes nothing, as on every backend), sent side by side from a
few threads, so a search waits about one round trip, not one per memory. A touch never leaves a
recall item for a memory that is gone: a touch that *created* the item (the memory's first
recall) then reads whether the memory still exists (strongly consistent) and deletes the item if
not; `purge` deletes the recall item once more after the memory item. Whichever order a touch and a
purge interleave in, no recall item outlives its memory (see `DynamoDBMemoryStore.purge`).

Reads: `get` is one Query of the collection from `MEMORY` to `RECALL` (nothing sorts between
them; both items in one read unit when they fit 4 KB together); `get_many` and `list_due` ask for
both keys in the same BatchGetItem; `list_memories` reads the page's recall items in one
eventually consistent BatchGetItem (GSI listings are eventually consistent anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.dynamodb.codec import number_value, python_value, string_value
from rearview.backends.dynamodb.expressions import Expression
from rearview.backends.dynamodb.keys import MEMORY_SK, RECALL_SK, memory_pk, sortable_time
from rearview.backends.dynamodb.table_client import error_code, store_error
from rearview.models import Memory
from rearview.ports import Touch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    from rearview.backends.dynamodb.table_client import TableClient

    Item = dict[str, AttributeValueTypeDef]

FIELDS = ("strength", "last_accessed_at", "access_count")
"""The memory fields a recall sets, and the recall item's attributes."""
MAX_PARALLEL_TOUCHES: Final = 8
"""UpdateItems in flight at once for one `touch` (a search reinforces at most its top hits)."""


def recall_key(pk: str) -> Item:
    """The recall item's key in the collection `pk` (a memory's `memory_pk`)."""
    return {"pk": string_value(pk), "sk": string_value(RECALL_SK)}


def keys_with_recalls(keys: Iterable[Mapping[str, Any]]) -> list[Item]:
    """Each memory item key followed by its recall item's key (for one BatchGetItem)."""
    out: list[Item] = []
    for key in keys:
        out.append({"pk": key["pk"], "sk": key["sk"]})
        out.append(recall_key(str(key["pk"]["S"])))
    return out


def is_recall_item(item: Mapping[str, Any]) -> bool:
    """Whether a raw item is a recall item."""
    return item.get("sk") == {"S": RECALL_SK}


def merged(memory: Memory, recall: Mapping[str, Any] | None) -> Memory:
    """`memory` (as its item stores it) with its recall item's fields when that recall is later."""
    if recall is None or not all(name in recall for name in FIELDS):
        return memory
    at = datetime.fromisoformat(str(python_value(recall["last_accessed_at"])))
    count = int(python_value(recall["access_count"]))
    if (at, count) <= (memory.last_accessed_at, memory.access_count):
        return memory
    strength = float(python_value(recall["strength"]))
    return memory.model_copy(update={"strength": strength, "last_accessed_at": at, "access_count": count})


def split(items: Iterable[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[str, Mapping[str, Any]]]:
    """(memory items, recall items by `pk`) of a read that asked for both."""
    memories: list[Mapping[str, Any]] = []
    recalls: dict[str, Mapping[str, Any]] = {}
    for item in items:
        if is_recall_item(item):
            recalls[str(item["pk"]["S"])] = item
        else:
            memories.append(item)
    return memories, recalls


def recalls_of(table: TableClient, memory_items: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The recall items of these memory items, by `pk` (one eventually consistent BatchGetItem per 100)."""
    keys = [recall_key(str(item["pk"]["S"])) for item in memory_items]
    return {str(item["pk"]["S"]): item for item in table.batch_get(keys, consistent=False)}


def record(table: TableClient, tenant_id: str, touches: Sequence[Touch]) -> None:
    """`MemoryStore.touch`: each touch moves its memory's recall item forward (see the module docstring)."""
    if len(touches) > 1:
        table.client  # noqa: B018 - made once here, not by each thread (low-level clients are thread-safe)
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_TOUCHES, len(touches))) as pool:
            made = list(pool.map(lambda touch: _update(table, tenant_id, touch), touches))
    else:
        made = [_update(table, tenant_id, touch) for touch in touches]
    created = [t.memory_id for t, new in zip(touches, made, strict=True) if new]
    if not created:
        return
    memory_keys = [
        {"pk": string_value(memory_pk(tenant_id, memory_id)), "sk": string_value(MEMORY_SK)}
        for memory_id in created
    ]
    alive = {str(item["pk"]["S"]) for item in table.batch_get(memory_keys, projection=("pk",))}
    orphans = [recall_key(str(k["pk"]["S"])) for k in memory_keys if str(k["pk"]["S"]) not in alive]
    if orphans:
        table.batch_delete(orphans)


def _update(table: TableClient, tenant_id: str, touch: Touch) -> bool:
    """Write one touch unless the recall item already holds a later one; whether it created the item."""
    from botocore.exceptions import BotoCoreError, ClientError

    expr = Expression()
    at = expr.string(sortable_time(touch.last_accessed_at))
    count = expr.value(number_value(touch.access_count))
    recorded_at, recorded_count = expr.name("last_accessed_at"), expr.name("access_count")
    later = (
        f"attribute_not_exists({expr.name('pk')}) OR {recorded_at} < {at}"
        f" OR ({recorded_at} = {at} AND {recorded_count} < {count})"
    )
    update = (
        f"SET {expr.name('item_type')} = {expr.string('recall')}, "
        f"{expr.name('strength')} = {expr.value(number_value(touch.strength))}, "
        f"{recorded_at} = {at}, {recorded_count} = {count}"
    )
    try:
        out = table.client.update_item(
            TableName=table.name,
            Key=recall_key(memory_pk(tenant_id, touch.memory_id)),
            UpdateExpression=update,
            ConditionExpression=later,
            ExpressionAttributeNames=expr.names,
            ExpressionAttributeValues=expr.values,
            ReturnValues="UPDATED_OLD",
        )
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return False
        raise store_error("UpdateItem", exc) from exc
    except BotoCoreError as exc:
        raise store_error("UpdateItem", exc) from exc
    return "item_type" not in out.get("Attributes", {})
