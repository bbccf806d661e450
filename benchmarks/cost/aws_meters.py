"""Meters for `aws_units.py`: what one operation asks of DynamoDB, S3, OpenSearch and Lambda's CPU.

- `DynamoDBMeter` hooks a boto3 DynamoDB client (on moto) and prices each call in request units
  by DynamoDB's documented rules, from the sizes of the items involved, because moto's own
  `ConsumedCapacity` is a constant per call (0.5 or 1.0 whatever the item; `moto_units` keeps it
  for comparison). The rules (on-demand; developer guide, "read/write capacity units"):
  - writes: 1 WRU per 1 KB of the larger of the item before and after, rounded up, at least 1;
    twice that inside TransactWriteItems (a ConditionCheck counts as a transactional write of
    the item it checks); each global secondary index whose entry the write adds, changes or
    removes costs 1 WRU per 1 KB of its projected entry (a key change is a delete and a put; a
    KEYS_ONLY index is not written when its keys do not change);
  - reads: 1 RRU per 4 KB, rounded up, strongly consistent (half eventually consistent);
    GetItem and BatchGetItem round each item (each key asked for: a missing item costs the
    minimum, a projected one its whole size), a Query rounds the sum of the items it evaluated
    (those a filter dropped included: scaled by ScannedCount / Count), at least one unit.
  Item sizes come from `codec.item_size` (attribute names + values, an upper bound).
- `S3Meter`: requests by operation and bytes put and got.
- `OpenSearchMeter`: HTTP requests by method and path kind, request and response bytes, and the
  engine's own `took`.
- `moto_cpu`: CPU seconds spent inside moto (the emulated AWS side), to subtract from an
  operation's in-process CPU time.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rearview.backends.dynamodb.codec import item_size

KB = 1024


@dataclass
class Usage:
    """What a stretch of operations used, summed."""

    rru: float = 0.0
    wru: float = 0.0
    moto_units: float = 0.0
    ddb_calls: Counter[str] = field(default_factory=Counter)
    s3_calls: Counter[str] = field(default_factory=Counter)
    s3_bytes_put: int = 0
    s3_bytes_got: int = 0
    os_calls: Counter[str] = field(default_factory=Counter)
    os_bytes_sent: int = 0
    os_bytes_received: int = 0
    os_took_ms: int = 0
    cpu_s: float = 0.0
    """In-process CPU of the operation, moto's emulation of AWS excluded."""
    embedded_texts: int = 0
    embedded_chars: int = 0


# ----------------------------------------------------------------------------------- DynamoDB


@dataclass(frozen=True)
class IndexShape:
    """One GSI: its key attributes and whether it projects the whole item."""

    keys: tuple[str, str]
    all_attributes: bool


def index_shapes(description: Mapping[str, Any]) -> list[IndexShape]:
    """The GSIs of a DescribeTable answer."""
    shapes = []
    for gsi in description.get("GlobalSecondaryIndexes", []):
        schema = {k["KeyType"]: k["AttributeName"] for k in gsi["KeySchema"]}
        shapes.append(
            IndexShape((schema["HASH"], schema["RANGE"]), gsi["Projection"]["ProjectionType"] == "ALL")
        )
    return shapes


def write_units(size_before: int, size_after: int) -> int:
    """Standard write units of one item write."""
    return max(1, math.ceil(max(size_before, size_after) / KB))


def read_units(size: int, consistent: bool) -> float:
    """Read units of `size` bytes read at once (one item, or one Query page's items)."""
    units = max(1, math.ceil(size / (4 * KB)))
    return units if consistent else units / 2


def index_write_units(
    shape: IndexShape, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> int:
    """Units one item write costs in one GSI (0 when its entry is not touched)."""

    def entry(item: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if item is None or not all(k in item for k in shape.keys):
            return None
        if shape.all_attributes:
            return dict(item)
        return {k: item[k] for k in ("pk", "sk", *shape.keys)}

    old, new = entry(before), entry(after)
    if old is None and new is None:
        return 0
    if old is None or new is None:
        return write_units(item_size(old or {}), item_size(new or {}))
    same_keys = all(old[k] == new[k] for k in shape.keys)
    if same_keys:
        return 0 if old == new else write_units(item_size(new), 0)
    return write_units(item_size(old), 0) + write_units(item_size(new), 0)


class DynamoDBMeter:
    """Prices the calls of one boto3 DynamoDB client into `usage` (see the module docstring).

    `raw` is a second client on the same (moto) endpoint, used unmetered to read the items a write
    replaces and leaves.
    """

    def __init__(self, client: Any, raw: Any, table: str) -> None:
        self.usage = Usage()
        self.raw = raw
        self.table = table
        self.shapes = index_shapes(raw.describe_table(TableName=table)["Table"])
        self._calls = threading.local()  # one call in flight per thread: its params and before-images
        self._lock = threading.Lock()  # around `usage`: a store may send calls from several threads
        client.meta.events.register("provide-client-params.dynamodb.*", self._on_params)
        client.meta.events.register("after-call.dynamodb.*", self._on_result)

    def _get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.raw.get_item(TableName=self.table, Key=dict(key), ConsistentRead=True)
        return found.get("Item")

    def _writes(self, operation: str, params: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(kind, key) of every item a write call touches; kind is `txn`, `check` or `std`."""
        out: list[tuple[str, dict[str, Any]]] = []
        if operation in ("PutItem",):
            out.append(("std", _key(params["Item"])))
        elif operation in ("UpdateItem", "DeleteItem"):
            out.append(("std", dict(params["Key"])))
        elif operation == "TransactWriteItems":
            for action in params["TransactItems"]:
                ((kind, body),) = action.items()
                key = _key(body["Item"]) if kind == "Put" else dict(body["Key"])
                out.append(("check" if kind == "ConditionCheck" else "txn", key))
        elif operation == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for request in requests:
                    body = request.get("PutRequest") or request["DeleteRequest"]
                    out.append(("std", _key(body["Item"]) if "Item" in body else dict(body["Key"])))
        return out

    def _on_params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        self._calls.before = {
            repr(sorted(key.items())): (kind, key, self._get(key))
            for kind, key in self._writes(operation, params)
        }
        self._calls.params = params

    def _on_result(self, http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self._price(http_response, parsed, model.name)

    def _price(self, http_response: Any, parsed: Mapping[str, Any], operation: str) -> None:
        usage, before = self.usage, self._calls.before
        usage.ddb_calls[operation] += 1
        capacity = parsed.get("ConsumedCapacity")
        for entry in capacity if isinstance(capacity, list) else [capacity] if capacity else []:
            usage.moto_units += float(entry.get("CapacityUnits", 0.0))
        if before:
            if "Error" in parsed or http_response.status_code >= 400:
                usage.wru += sum(1 for kind, *_ in before.values() if kind == "std")
            else:
                self._price_writes(before)
            self._calls.before = {}
            return
        params = self._calls.params
        if operation == "GetItem":
            item = parsed.get("Item")
            usage.rru += read_units(item_size(item) if item else 0, bool(params.get("ConsistentRead")))
        elif operation == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                usage.rru += self._batch_get_units(request, parsed.get("Responses", {}).get(table, []))
        elif operation == "Query":
            items = parsed.get("Items", [])
            size = sum(item_size(i) for i in items)
            count, scanned = parsed.get("Count", 0), parsed.get("ScannedCount", 0)
            if scanned > count and count:
                size = size * scanned // count
            elif scanned > count:
                size = scanned * 1024  # all filtered out: a 1 KB guess per evaluated item
            usage.rru += read_units(size, bool(params.get("ConsistentRead")))

    def _batch_get_units(self, request: Mapping[str, Any], found: list[Mapping[str, Any]]) -> float:
        """Each key asked for, as a GetItem: a missing item still costs the minimum, and a projected
        one is charged at the whole item's size (a projection does not change what is read)."""
        consistent = bool(request.get("ConsistentRead"))
        if "ProjectionExpression" in request:  # what a key found is read whole
            found = [i for i in (self._get(_key(k)) for k in request["Keys"]) if i is not None]
        returned = {repr(sorted(_key(i).items())): i for i in found}
        units = 0.0
        for key in request["Keys"]:
            item = returned.get(repr(sorted(_key(key).items())))
            units += read_units(item_size(item) if item is not None else 0, consistent)
        return units

    def _price_writes(self, writes: Mapping[str, Any]) -> None:
        for kind, key, before in writes.values():
            after = self._get(key)
            units = write_units(item_size(before or {}), item_size(after or {}))
            self.usage.wru += units * (2 if kind in ("txn", "check") else 1)
            if kind != "check":
                self.usage.wru += sum(index_write_units(s, before, after) for s in self.shapes)


def _key(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"pk": item["pk"], "sk": item["sk"]}


# ----------------------------------------------------------------------------------------- S3


class S3Meter:
    """Counts the calls of one boto3 S3 client, and the object bytes put and got, into `holder.usage`."""

    def __init__(self, client: Any, holder: DynamoDBMeter) -> None:
        self.holder = holder
        client.meta.events.register("provide-client-params.s3.*", self._on_params)
        client.meta.events.register("after-call.s3.*", self._on_result)

    def _on_params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "PutObject":
            body = params.get("Body", b"")
            self.holder.usage.s3_bytes_put += len(body) if isinstance(body, bytes | str) else 0

    def _on_result(self, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        self.holder.usage.s3_calls[model.name] += 1
        if model.name == "GetObject":
            self.holder.usage.s3_bytes_got += int(parsed.get("ContentLength", 0))


# --------------------------------------------------------------------------------- OpenSearch


class OpenSearchMeter:
    """Counts the HTTP requests an opensearch-py client sends (wrapping its transport) into `holder.usage`."""

    def __init__(self, client: Any, holder: DynamoDBMeter) -> None:
        transport = client.transport
        original = transport.perform_request

        def perform_request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            body = kwargs.get("body")
            sent = len(body) if isinstance(body, bytes | str) else len(str(body or ""))
            answer = original(method, url, *args, **kwargs)
            kind = url.strip("/").split("/")[-1].split("?")[0] if "_" in url else "doc"
            usage = holder.usage
            usage.os_calls[f"{method} {kind}"] += 1
            usage.os_bytes_sent += sent
            usage.os_bytes_received += len(json.dumps(answer)) if isinstance(answer, dict | list) else 0
            usage.os_took_ms += sum(_took(answer))
            return answer

        transport.perform_request = perform_request


def _took(answer: Any) -> Iterator[int]:
    if isinstance(answer, Mapping):
        if isinstance(answer.get("took"), int):
            yield answer["took"]
        for response in answer.get("responses", []) or []:
            yield from _took(response)


# -------------------------------------------------------------------------------------- moto


class MotoClock:
    """CPU seconds spent inside moto's emulation since installation (subtracted from operations)."""

    def __init__(self) -> None:
        from moto.core import botocore_stubber

        self.spent = 0.0
        original = botocore_stubber.BotocoreStubber.__call__
        meter = self

        def timed(stubber: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()  # moto runs in the calling thread, which may not be the only one
            try:
                return original(stubber, *args, **kwargs)
            finally:
                meter.spent += time.thread_time() - started

        botocore_stubber.BotocoreStubber.__call__ = timed  # type: ignore[method-assign]


@contextmanager
def app_cpu(usage: Usage, moto: MotoClock) -> Iterator[None]:
    """Adds the block's in-process CPU, less moto's, to `usage.cpu_s`."""
    started, moto_started = time.process_time(), moto.spent
    try:
        yield
    finally:
        usage.cpu_s += (time.process_time() - started) - (moto.spent - moto_started)
