"""The lifecycle jobs' due orders on DynamoDB: `list_due` reads a due GSI, `schedule` moves a memory in it.

A memory's place in the due orders is on a small item of its own, beside it in its collection:

| item | `pk` | `sk` | attributes |
|---|---|---|---|
| due | `T#<tenant>#M#<id>` | `DUE` | `item_type`, `version`, `gsi4pk`, `expiry_key`, `gsi5pk`, `fade_key` |

(and the memory's TTL attributes).

Every commit writes it in the same transaction as the memory (`due_item`: the memory's version,
decay due at `updated_at`, archive at `expires_at`), or deletes it when the memory leaves the due
statuses, so it exists exactly while the memory can be due and names the memory's version.
`gsi4_due_archive` (by expiry) and `gsi5_due_decay` (by next decay check) index only due items
(sparse, KEYS_ONLY: `schema`). On the memory item the keys made `schedule` rewrite the whole item
and, since the three listing GSIs project every attribute, each of their copies: about 9 write
units per memory on a first run. Moving a due item is 1 unit (under 1 KB) plus its keys-only
decay entry (a delete and a put): 3 units whatever the memory's size, and 1 when nothing moves.

A page of `list_due` is one Query of the tenant's due partition up to `before` (the keys of at
most `limit + 1` entries) and one BatchGetItem of those memories with their recall items. What a
run reads is what is due, plus one key past the page; no Scan, no read of the tenant's other memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rearview.backends.due_order import DUE_STATUSES, decode_due_cursor, encode_due_cursor
from rearview.backends.dynamodb import recall
from rearview.backends.dynamodb.codec import (
    DUE_GSI_ATTRIBUTES,
    due_attributes,
    expiry_attributes,
    memory_from_item,
    number_value,
    string_value,
)
from rearview.backends.dynamodb.expressions import Expression
from rearview.backends.dynamodb.keys import DUE_SK, MEMORY_SK, due_pk, memory_pk, sortable_time
from rearview.backends.dynamodb.listing import query_items
from rearview.backends.dynamodb.schema import GSI_DUE
from rearview.backends.dynamodb.table_client import (
    TableClient,
    TransactionCancelledError,
    error_code,
    store_error,
)
from rearview.models import Memory, MemoryStatus, Page
from rearview.ports import DueAt, DueJob

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef

    Item = dict[str, AttributeValueTypeDef]


def due_key_of(tenant_id: str, memory_id: str) -> Item:
    """The key of a memory's due item."""
    return {"pk": string_value(memory_pk(tenant_id, memory_id)), "sk": string_value(DUE_SK)}


def due_item(memory: Memory) -> Item | None:
    """The due item a commit of `memory` writes: decay due at its write, archive at its expiry.

    None when the memory cannot be due (an archived stub, a deleted memory): its due item goes.
    """
    if memory.status not in DUE_STATUSES:
        return None
    return {
        **due_key_of(memory.tenant_id, memory.id),
        "item_type": string_value("due"),
        "version": number_value(memory.version),
        **due_attributes(memory.tenant_id, memory.id, memory.status, memory.updated_at, memory.expires_at),
        **expiry_attributes(memory.expires_at),  # the TTL: no due item outlives its memory's expiry
    }


def list_due(
    table: TableClient,
    tenant_id: str,
    job: DueJob,
    before: datetime,
    cursor: str | None,
    limit: int,
    now: datetime,
) -> Page:
    """`MemoryStore.list_due` on the table (see the module docstring)."""
    pk_attribute, sk_attribute = DUE_GSI_ATTRIBUTES[job]
    expr = Expression()
    upper = sortable_time(before) + "$"  # past every `<before>#<id>` key ('$' sorts right after '#')
    after = decode_due_cursor(cursor)
    condition = (
        f"{expr.name(pk_attribute)} = {expr.string(due_pk(tenant_id, job))} AND {expr.name(sk_attribute)} "
    )
    if after is None:
        condition += f"< {expr.string(upper)}"
    else:
        condition += f"BETWEEN {expr.string(after[0])} AND {expr.string(upper)}"
    query: QueryInputTypeDef = {
        "TableName": table.name,
        "IndexName": GSI_DUE[job],
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": expr.names,
        "ExpressionAttributeValues": expr.values,
    }
    keys: list[tuple[str, dict[str, str]]] = []  # (due key, table key of the memory)
    for item in query_items(table, query, page_size=limit + 2):
        position = str(item[sk_attribute]["S"])
        if after is not None and position <= after[0]:
            continue
        keys.append((position, {"pk": str(item["pk"]["S"]), "sk": MEMORY_SK}))  # the due item's memory
        if len(keys) > limit:
            break
    page, more = keys[:limit], len(keys) > limit
    wanted = recall.keys_with_recalls({"pk": {"S": k["pk"]}, "sk": {"S": k["sk"]}} for _, k in page)
    found_items, recalls = recall.split(table.batch_get(wanted))  # each memory with its recall item
    fetched = {str(item["pk"]["S"]): item for item in found_items}
    items: list[Memory] = []
    for _, key in page:  # in due order; gone, expired or no longer due-able memories are skipped
        found = fetched.get(key["pk"])
        memory = recall.merged(memory_from_item(found), recalls.get(key["pk"])) if found is not None else None
        if memory is not None and memory.status in DUE_STATUSES and not memory.is_expired(now):
            items.append(memory)
    next_cursor = encode_due_cursor(page[-1][0], page[-1][1]["pk"]) if more else None
    return Page(items=items, cursor=next_cursor)


def schedule(table: TableClient, tenant_id: str, entries: Sequence[DueAt]) -> None:
    """`MemoryStore.schedule`: one conditional UpdateItem of each memory's due item (never the memory).

    The due item names the memory's version, so the condition is on it alone. A memory without
    one (written before due items existed) gets it in a transaction that checks the memory
    item's version and status; a changed, archived or gone memory is left alone.
    """
    from botocore.exceptions import ClientError  # not at import: the package loads without boto3

    for entry in entries:
        keys = due_attributes(tenant_id, entry.memory_id, MemoryStatus.ACTIVE, entry.due, entry.expires_at)
        expr = Expression()
        sets = [f"{expr.name(name)} = {expr.value(value)}" for name, value in keys.items()]
        update = f"SET {', '.join(sets)}" if sets else ""
        if entry.due is None:
            fade_pk, fade_sk = DUE_GSI_ATTRIBUTES["decay"]
            update += f" REMOVE {expr.name(fade_pk)}, {expr.name(fade_sk)}"
        version = f"{expr.name('version')} = {expr.value(number_value(entry.version))}"
        try:
            table.client.update_item(
                TableName=table.name,
                Key=due_key_of(tenant_id, entry.memory_id),
                UpdateExpression=update.strip(),
                ConditionExpression=version,
                ExpressionAttributeNames=expr.names,
                ExpressionAttributeValues=expr.values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise store_error("UpdateItem", exc) from exc
            if not exc.response.get("Item"):  # no due item: the memory may predate them
                _add_due_item(table, tenant_id, entry, keys)


def _add_due_item(table: TableClient, tenant_id: str, entry: DueAt, keys: Item) -> None:
    """The due item of a memory that has none, if the memory is still due-able at `entry.version`."""
    expr = Expression()
    statuses = ", ".join(expr.string(s.value) for s in DUE_STATUSES)
    memory_is_current = (
        f"{expr.name('version')} = {expr.value(number_value(entry.version))}"
        f" AND {expr.name('status')} IN ({statuses})"
    )
    item: Item = {
        **due_key_of(tenant_id, entry.memory_id),
        "item_type": string_value("due"),
        "version": number_value(entry.version),
        **keys,
        **expiry_attributes(entry.expires_at),
    }
    check: Any = {
        "TableName": table.name,
        "Key": {"pk": string_value(memory_pk(tenant_id, entry.memory_id)), "sk": string_value(MEMORY_SK)},
        "ConditionExpression": memory_is_current,
        "ExpressionAttributeNames": expr.names,
        "ExpressionAttributeValues": expr.values,
    }
    put: Any = {
        "TableName": table.name,
        "Item": item,
        "ConditionExpression": "attribute_not_exists(pk)",  # a commit meanwhile wrote a newer one
    }
    try:
        table.transact([{"ConditionCheck": check}, {"Put": put}])
    except TransactionCancelledError:
        return  # changed, archived or gone since: its commit decides its place
