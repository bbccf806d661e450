"""The table's schema: `table_definition()` mirrors `template.yaml`'s `MemoryTable` (a test keeps them equal).

Global secondary indexes (projection ALL; only memory items carry their keys):

| index | partition key | sort key |
|---|---|---|
| `gsi1_tenant_updated` | `gsi1pk` = `T#<tenant>` | `updated_key` = `<updated_at>#<id>` |
| `gsi2_session_updated` | `gsi2pk` = `T#<tenant>#S#<session>` (sparse) | `updated_key` |
| `gsi3_type_status_updated` | `gsi3pk` = `T#<tenant>#<type>#<status>` | `updated_key` |

- `gsi1`: `list_memories()` across all types and statuses, newest first; `stats()`.
- `gsi2`: `list(session_id=...)`: one session's memories, newest first.
- `gsi3`: `list(types=..., statuses=...)`: one partition per (type, status) pair, merged
  newest first (used when at most 4 partitions cover the filter, e.g. the default `active`).

A recall writes none of them: it goes to the memory's small `RECALL` item, which carries no index
key (`recall`). Two more, sparse and KEYS_ONLY, for the lifecycle jobs' due orders
(`due.list_due`: a run reads what is due, not the tenant):

| index | partition key | sort key |
|---|---|---|
| `gsi4_due_archive` | `gsi4pk` = `T#<tenant>#DUE#archive` | `expiry_key` = `<expires_at>#<id>` |
| `gsi5_due_decay` | `gsi5pk` = `T#<tenant>#DUE#decay` | `fade_key` = `<next decay check>#<id>` |

Only active and superseded memories carry them; a commit sets `fade_key` to the memory's
`updated_at` (examined once) and the decay job moves it to when the memory will have faded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from rearview.backends.dynamodb.codec import DUE_GSI_ATTRIBUTES, TTL_ATTRIBUTE
from rearview.backends.dynamodb.table_client import error_code, store_error
from rearview.errors import StoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import CreateTableInputTypeDef, GlobalSecondaryIndexTypeDef

    from rearview.backends.dynamodb.table_client import TableClient

GSI_TENANT: Final = "gsi1_tenant_updated"
GSI_SESSION: Final = "gsi2_session_updated"
GSI_TYPE_STATUS: Final = "gsi3_type_status_updated"
GSI_DUE: Final = {"archive": "gsi4_due_archive", "decay": "gsi5_due_decay"}
_INDEXES: Final = {GSI_TENANT: "gsi1pk", GSI_SESSION: "gsi2pk", GSI_TYPE_STATUS: "gsi3pk"}
"""The listing indexes, by their partition key attribute; all sort by `updated_key` (projection ALL)."""
_DUE_INDEXES: Final = {GSI_DUE[job]: DUE_GSI_ATTRIBUTES[job] for job in ("archive", "decay")}
"""The due indexes: (partition key, sort key) attributes; projection KEYS_ONLY."""


def _gsi(
    name: str, pk: str, sk: str, projection: Literal["ALL", "KEYS_ONLY"] = "ALL"
) -> GlobalSecondaryIndexTypeDef:
    return {
        "IndexName": name,
        "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": projection},
    }


def table_definition(table_name: str) -> CreateTableInputTypeDef:
    """CreateTable arguments equal to `template.yaml`'s `MemoryTable`."""
    due_keys = [a for keys in _DUE_INDEXES.values() for a in keys]
    attributes = ("pk", "sk", *_INDEXES.values(), "updated_key", *due_keys)
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attributes],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            *(_gsi(name, pk, "updated_key") for name, pk in _INDEXES.items()),
            *(_gsi(name, pk, sk, "KEYS_ONLY") for name, (pk, sk) in _DUE_INDEXES.items()),
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "SSESpecification": {"Enabled": True},
    }


def ensure_table(table: TableClient) -> None:
    """Create the table (as in template.yaml) if missing, with TTL; verify the GSIs if present.

    Idempotent. A table that exists without one of the GSIs is a `StoreError` (deployed tables
    are changed through the template, not from here).
    """
    from botocore.exceptions import ClientError

    try:
        described = table.client.describe_table(TableName=table.name)["Table"]
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise store_error("DescribeTable", exc) from exc
        _create_table(table)
        return
    present = {gsi["IndexName"] for gsi in described.get("GlobalSecondaryIndexes", [])}
    missing = (set(_INDEXES) | set(_DUE_INDEXES)) - present
    if missing:
        raise StoreError(f"table {table.name} lacks indexes {sorted(missing)}: redeploy template.yaml")


def _create_table(table: TableClient) -> None:
    client = table.client
    table.call("CreateTable", client.create_table, **table_definition(table.name))
    table.call("DescribeTable", client.get_waiter("table_exists").wait, TableName=table.name)
    table.call(
        "UpdateTimeToLive",
        client.update_time_to_live,
        TableName=table.name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )
