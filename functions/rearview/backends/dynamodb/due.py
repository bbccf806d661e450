"""The lifecycle jobs' due orders on DynamoDB: `list_due` reads a due GSI, `schedule` moves a memory in it.

`gsi4_due_archive` (by expiry) and `gsi5_due_decay` (by next decay check) are sparse and
KEYS_ONLY (`schema`): a page is one Query of the tenant's due partition up to `before` (the keys
of at most `limit + 1` entries) and one BatchGetItem of those memories. What a run reads is
what is due, plus one key past the page; no Scan, no read of the tenant's other memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rearview.backends.due_order import DUE_STATUSES, decode_due_cursor, encode_due_cursor
from rearview.backends.dynamodb import recall
from rearview.backends.dynamodb.codec import (
    DUE_GSI_ATTRIBUTES,
    due_attributes,
    memory_from_item,
    number_value,
)
from rearview.backends.dynamodb.expressions import Expression
from rearview.backends.dynamodb.keys import MEMORY_SK, due_pk, memory_pk, sortable_time
from rearview.backends.dynamodb.listing import query_items
from rearview.backends.dynamodb.schema import GSI_DUE
from rearview.backends.dynamodb.table_client import TableClient, error_code, store_error
from rearview.models import Memory, MemoryStatus, Page
from rearview.ports import DueAt, DueJob

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef


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
        keys.append((position, {"pk": str(item["pk"]["S"]), "sk": str(item["sk"]["S"])}))
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
    """`MemoryStore.schedule`: one conditional UpdateItem per memory (a changed or gone one is left alone)."""
    from botocore.exceptions import ClientError  # not at import: the package loads without boto3

    for entry in entries:
        keys = due_attributes(tenant_id, entry.memory_id, MemoryStatus.ACTIVE, entry.due, entry.expires_at)
        expr = Expression()
        sets = [f"{expr.name(name)} = {expr.value(value)}" for name, value in keys.items()]
        update = f"SET {', '.join(sets)}" if sets else ""
        if entry.due is None:
            fade_pk, fade_sk = DUE_GSI_ATTRIBUTES["decay"]
            update += f" REMOVE {expr.name(fade_pk)}, {expr.name(fade_sk)}"
        statuses = ", ".join(expr.string(s.value) for s in DUE_STATUSES)
        condition = (
            f"{expr.name('version')} = {expr.value(number_value(entry.version))}"
            f" AND {expr.name('status')} IN ({statuses})"
        )
        try:
            table.client.update_item(
                TableName=table.name,
                Key={"pk": {"S": memory_pk(tenant_id, entry.memory_id)}, "sk": {"S": MEMORY_SK}},
                UpdateExpression=update.strip(),
                ConditionExpression=condition,
                ExpressionAttributeNames=expr.names,
                ExpressionAttributeValues=expr.values,
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise store_error("UpdateItem", exc) from exc
