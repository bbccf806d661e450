"""Items ↔ `Memory` / `HistoryEvent`: the attribute layout of the table's items.

- memory (`pk` `T#<tenant>#M#<id>`, `sk` `MEMORY`): every `Memory` field as its own attribute
  (times as fixed-width ISO-8601 UTC, `metadata` and `cues` as JSON; no `cues` attribute for a
  memory without any, as in items written before cues existed), `expires_at` (the TTL attribute,
  epoch seconds rounded up), `expires_iso` (the exact instant, for read-time expiry checks) and
  the listing GSI keys (`gsi1pk`, `gsi2pk` when the memory has a session, `gsi3pk`, `updated_key`);
  its place in the due orders is on its small due item (`due_attributes`, written by `writes`).
- history event (same `pk`, `sk` `H#<version:010d>#<event id>`): `event`, the event as JSON.

Public because the DynamoDB stream consumer (`handlers/stream.py`) decodes old images with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, DecimalException
from functools import cache
from typing import TYPE_CHECKING, Any, Final, cast

from rearview.backends.dynamodb.keys import (
    MEMORY_SK,
    due_key,
    due_pk,
    history_sk,
    memory_pk,
    session_pk,
    sortable_time,
    tenant_pk,
    type_status_pk,
    updated_key,
)
from rearview.errors import InvalidInputError
from rearview.models import HistoryEvent, Memory, MemoryStatus

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    Item = dict[str, AttributeValueTypeDef]

TTL_ATTRIBUTE: Final = "expires_at"
MAX_ITEM_BYTES: Final = 400 * 1024
"""DynamoDB's item size limit (also applies to every GSI projection of the item)."""
_JSON_FIELDS: Final = frozenset({"metadata", "cues"})
"""Fields stored as one JSON string attribute (`cues`: a list of `{"by", "text"}` objects)."""
_OMITTED_WHEN_EMPTY: Final = frozenset({"cues", "contested_by"})
"""Fields with no attribute when empty: an item written before the field existed reads the same."""


def string_value(text: str) -> AttributeValueTypeDef:
    """A DynamoDB string attribute."""
    return {"S": text}


def number_value(number: float) -> AttributeValueTypeDef:
    """A DynamoDB number; floats keep their exact `repr`, non-finite or out-of-range ones are refused."""
    return attribute_value(number)


def attribute_value(value: Any) -> AttributeValueTypeDef:
    """The attribute for one model field value (bool, datetime, str, number or list of those).

    boto3's `TypeSerializer` does the encoding once datetimes are sortable strings and floats are
    `Decimal`s of their `repr` (it refuses floats, since their binary value is not what was meant).
    Its `Decimal` context also refuses numbers DynamoDB cannot hold (over 38 digits, beyond 1E±126).
    """
    try:
        return _serializer().serialize(_storable(value))
    except (TypeError, DecimalException) as exc:
        raise InvalidInputError("memory", f"cannot store {value!r} ({type(exc).__name__})") from exc


def _storable(value: Any) -> Any:
    """`value` as `TypeSerializer` takes it: datetimes as sortable text, floats as exact Decimals."""
    if isinstance(value, datetime):
        return sortable_time(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("memory", f"number {value!r} cannot be stored")
        return Decimal(repr(value))
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    return value


def python_value(attribute: Mapping[str, Any]) -> Any:
    """The Python value of an attribute as the client returns it (numbers: int unless fractional).

    boto3's `TypeDeserializer` decodes it; its `Decimal`s become int (no fractional digits or
    exponent in the stored text) or float.
    """
    return _plain(_deserializer().deserialize(cast("AttributeValueTypeDef", attribute)))


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value.as_tuple().exponent == 0 else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@cache
def _serializer() -> TypeSerializer:
    from boto3.dynamodb.types import TypeSerializer  # not at import: the package loads without boto3

    return TypeSerializer()


@cache
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def expiry_attributes(expires_at: datetime | None) -> Item:
    """`expires_at` (TTL) and `expires_iso` for an item that expires, nothing otherwise."""
    if expires_at is None:
        return {}
    # TTL wants whole epoch seconds; round up so DynamoDB never deletes before the exact instant.
    return {
        TTL_ATTRIBUTE: number_value(math.ceil(expires_at.timestamp())),
        "expires_iso": string_value(sortable_time(expires_at)),
    }


def memory_to_item(memory: Memory) -> Item:
    """The memory item (keys, GSI keys, TTL and every field)."""
    item: Item = {
        "pk": string_value(memory_pk(memory.tenant_id, memory.id)),
        "sk": string_value(MEMORY_SK),
        "item_type": string_value("memory"),
        "gsi1pk": string_value(tenant_pk(memory.tenant_id)),
        "gsi3pk": string_value(type_status_pk(memory.tenant_id, memory.type, memory.status)),
        "updated_key": string_value(updated_key(memory)),
    }
    if memory.session_id is not None:
        item["gsi2pk"] = string_value(session_pk(memory.tenant_id, memory.session_id))
    as_json = memory.model_dump(mode="json", include=set(_JSON_FIELDS))
    for name, value in memory:
        if value is None or name == "expires_at" or (name in _OMITTED_WHEN_EMPTY and not value):
            continue
        if name in _JSON_FIELDS:
            item[name] = string_value(json.dumps(as_json[name], sort_keys=True))
        else:
            item[name] = attribute_value(value)
    item.update(expiry_attributes(memory.expires_at))
    return item


DUE_GSI_ATTRIBUTES: Final = {"decay": ("gsi5pk", "fade_key"), "archive": ("gsi4pk", "expiry_key")}
"""Each lifecycle job's due GSI key attributes (`schema`): sparse, only on memories that can be due."""


def due_attributes(
    tenant_id: str,
    memory_id: str,
    status: MemoryStatus,
    fade_at: datetime | None,
    expires_at: datetime | None,
) -> Item:
    """The due GSIs' keys of a memory: decay at `fade_at`, archive at `expires_at` (none if never due)."""
    if status not in (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED):
        return {}
    item: Item = {}
    for job, when in (("decay", fade_at), ("archive", expires_at)):
        if when is not None:
            pk, sk = DUE_GSI_ATTRIBUTES[job]
            item[pk], item[sk] = string_value(due_pk(tenant_id, job)), string_value(due_key(when, memory_id))
    return item


def is_memory_item(item: Mapping[str, Any]) -> bool:
    """Whether a raw item (from a Query or a stream image) is a memory, not a history/lookup item."""
    return item.get("sk") == {"S": MEMORY_SK} and item.get("item_type") == {"S": "memory"}


def memory_from_item(item: Mapping[str, Any]) -> Memory:
    """The `Memory` stored in a memory item (as read by the client or found in a stream image)."""
    data: dict[str, Any] = {}
    for name in Memory.model_fields:
        attribute = item.get(name)
        if attribute is None or name == "expires_at":
            continue
        value = python_value(attribute)
        data[name] = json.loads(value) if name in _JSON_FIELDS else value
    if "expires_iso" in item:
        data["expires_at"] = python_value(item["expires_iso"])
    return Memory.model_validate(data)


def event_to_item(memory: Memory, event: HistoryEvent) -> Item:
    """The history item of `event`, in its memory's item collection."""
    return {
        "pk": string_value(memory_pk(memory.tenant_id, memory.id)),
        "sk": string_value(history_sk(memory.version, event.id)),
        "item_type": string_value("history_event"),
        "event": string_value(event.model_dump_json()),
    }


def event_from_item(item: Mapping[str, Any]) -> HistoryEvent:
    """The `HistoryEvent` stored in a history item."""
    return HistoryEvent.model_validate_json(str(python_value(item["event"])))


def _attribute_size(attribute: Mapping[str, Any]) -> int:
    """An upper bound of DynamoDB's size for one attribute value, in bytes."""
    if "S" in attribute:
        return len(str(attribute["S"]).encode("utf-8"))
    if "N" in attribute:
        return len(str(attribute["N"])) + 1
    if "L" in attribute:
        return 3 + sum(_attribute_size(v) + 1 for v in attribute["L"])
    if "M" in attribute:
        return 3 + sum(len(k.encode("utf-8")) + _attribute_size(v) + 1 for k, v in attribute["M"].items())
    return 1


def item_size(item: Mapping[str, Any]) -> int:
    """An upper bound of the stored size of an item, to refuse it before DynamoDB does."""
    return sum(len(name.encode("utf-8")) + _attribute_size(value) for name, value in item.items())


def check_item_size(field: str, item: Item, what: str) -> None:
    """`InvalidInputError` (naming `field`) when `item` would exceed DynamoDB's item size limit."""
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise InvalidInputError(
            field, f"{what} would be a {size}-byte DynamoDB item; the limit is {MAX_ITEM_BYTES} bytes"
        )
