"""Queries, cursors and pagination for `list_memories()`: the narrowest index, every criterion in the Query.

`list_memories()` picks the narrowest index for the filter (`plan_listing`) and applies every other
`MemoryFilter` criterion (and expiry) in the Query's FilterExpression; it keeps paging until
`limit` items are gathered or the partitions are exhausted. Its cursor is an opaque, encoded
`updated_key` of the last item returned: each partition resumes past it, which is the
`LastEvaluatedKey` of every partition at once, so merged listings page exactly.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

from rearview.backends.dynamodb import recall
from rearview.backends.dynamodb.codec import memory_from_item, string_value
from rearview.backends.dynamodb.expressions import Expression, all_of, filter_conditions
from rearview.backends.dynamodb.keys import session_pk, tenant_pk, type_status_pk
from rearview.backends.dynamodb.schema import GSI_SESSION, GSI_TENANT, GSI_TYPE_STATUS
from rearview.errors import InvalidInputError
from rearview.models import MemoryFilter, MemoryStatus, MemoryType, Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef

    from rearview.backends.dynamodb.table_client import TableClient

    Item = dict[str, AttributeValueTypeDef]

MAX_QUERY_PAGE: Final = 1000
_MAX_MERGED_PARTITIONS: Final = 4
_SORT_KEY: Final = "updated_key"


def encode_cursor(position: str) -> str:
    """The opaque cursor of a page whose last item sorts at `position`."""
    return base64.urlsafe_b64encode(json.dumps({"v": 1, "after": position}).encode()).decode()


def decode_cursor(cursor: str | None) -> str | None:
    """The position a cursor resumes after; `InvalidInputError` for one `encode_cursor` did not make."""
    if cursor is None:
        return None
    try:
        position = json.loads(base64.urlsafe_b64decode(cursor.encode()))["after"]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page") from exc
    if not isinstance(position, str):
        raise InvalidInputError("cursor", "is not a cursor returned by a previous page")
    return position


def query_items(table: TableClient, query: QueryInputTypeDef, page_size: int | None = None) -> Iterator[Item]:
    """Every item of a Query, fetched lazily page by page.

    Without `page_size` each page is as large as DynamoDB allows; with it the first page holds
    `page_size` items and each next one twice as many (up to 1,000), so a caller that stops
    early reads little and a heavily filtered query still converges fast. Not botocore's `query`
    paginator: its `PageSize` is one `Limit` for every page, and its errors would surface from
    the iteration, past `TableClient`'s error translation.
    """
    params = dict(query)
    while True:
        if page_size is not None:
            params["Limit"] = page_size
            page_size = min(MAX_QUERY_PAGE, page_size * 2)
        out = table.query_page(params)
        yield from out["Items"]
        last = out.get("LastEvaluatedKey")
        if not last:
            return
        params["ExclusiveStartKey"] = last


@dataclass(frozen=True, slots=True)
class ListingPlan:
    """Which index a listing reads, its partitions (key attribute, value), what they already enforce."""

    index: str
    partitions: list[tuple[str, str]]
    covered: frozenset[str]


def plan_listing(tenant_id: str, filter: MemoryFilter) -> ListingPlan:
    """The narrowest index for `filter`: the session's, up to 4 (type, status) partitions, or the tenant's."""
    if filter.session_id is not None:
        return ListingPlan(
            GSI_SESSION, [("gsi2pk", session_pk(tenant_id, filter.session_id))], frozenset({"session"})
        )
    types = filter.types if filter.types is not None else tuple(MemoryType)
    statuses = tuple(dict.fromkeys(filter.statuses))
    narrowing = filter.types is not None or set(statuses) != set(MemoryStatus)
    if narrowing and len(types) * len(statuses) <= _MAX_MERGED_PARTITIONS:
        partitions = [
            ("gsi3pk", type_status_pk(tenant_id, t, s)) for t in dict.fromkeys(types) for s in statuses
        ]
        return ListingPlan(GSI_TYPE_STATUS, partitions, frozenset({"types", "statuses"}))
    return ListingPlan(GSI_TENANT, [("gsi1pk", tenant_pk(tenant_id))], frozenset())


def index_query(
    table_name: str,
    index: str,
    partition: tuple[str, str],
    *,
    after: str | None,
    descending: bool,
    expr: Expression,
    conditions: dict[str, str],
) -> QueryInputTypeDef:
    """A Query of one index partition in the given direction, past `after`, filtered by `conditions`."""
    pk_attribute, pk = partition
    key_names = {"#ipk": pk_attribute}
    key_values: dict[str, AttributeValueTypeDef] = {":ipk": string_value(pk)}
    key_condition = "#ipk = :ipk"
    if after is not None:
        key_condition += " AND #isk < :after" if descending else " AND #isk > :after"
        key_names["#isk"] = _SORT_KEY
        key_values[":after"] = string_value(after)
    return {
        "TableName": table_name,
        "IndexName": index,
        "KeyConditionExpression": key_condition,
        "FilterExpression": all_of(conditions),
        "ExpressionAttributeNames": {**expr.names, **key_names},
        "ExpressionAttributeValues": {**expr.values, **key_values},
        "ScanIndexForward": not descending,
    }


def list_memories(
    table: TableClient,
    tenant_id: str,
    filter: MemoryFilter,
    cursor: str | None,
    limit: int,
    now: datetime,
    *,
    oldest_first: bool = False,
) -> Page:
    """`MemoryStore.list_memories` on the table: newest `updated_at` first (or oldest), full pages."""
    if limit < 1:
        raise InvalidInputError("limit", f"must be at least 1 (got {limit})")
    after = decode_cursor(cursor)
    if not filter.statuses or filter.types == ():
        return Page(items=[])
    plan = plan_listing(tenant_id, filter)
    expr = Expression()
    conditions = filter_conditions(expr, filter, plan.covered, now)
    page_size = min(MAX_QUERY_PAGE, max(10, (limit + 1) // len(plan.partitions) + 2))
    partitions = [
        query_items(
            table,
            index_query(
                table.name,
                plan.index,
                partition,
                after=after,
                descending=not oldest_first,
                expr=expr,
                conditions=conditions,
            ),
            page_size,
        )
        for partition in plan.partitions
    ]
    merged = heapq.merge(*partitions, key=lambda item: str(item[_SORT_KEY]["S"]), reverse=not oldest_first)
    items = list(itertools.islice(merged, limit + 1))
    more = len(items) > limit
    recalls = recall.recalls_of(table, items[:limit])
    return Page(
        items=[recall.merged(memory_from_item(i), recalls.get(str(i["pk"]["S"]))) for i in items[:limit]],
        cursor=encode_cursor(str(items[limit - 1][_SORT_KEY]["S"])) if more else None,
    )
