"""`DynamoDBCheckpointStore`: lifecycle job progress in the memory table, so jobs resume after a cold start.

One item per (tenant, job): `pk` `T#<tenant>#JOB#<job>`, `sk` `CHECKPOINT`, with `item_type`
`job_checkpoint`, `tenant_id`, `job`, `state` (the job's opaque JSON) and `saved_at`. It carries
no GSI keys and no TTL, so no listing sees it and the stream consumer ignores its changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rearview.backends.dynamodb.codec import check_item_size, python_value, string_value
from rearview.backends.dynamodb.keys import CHECKPOINT_SK, checkpoint_pk, sortable_time
from rearview.backends.dynamodb.schema import ensure_table
from rearview.backends.dynamodb.table_client import TableClient
from rearview.shared.clock import Clock, SystemClock
from rearview.shared.retry import RetryPolicy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


class DynamoDBCheckpointStore:
    """A `CheckpointStore` on the memory table (strongly consistent reads, last save wins).

    The constructor does no I/O; the boto3 client is created on first use unless one is given.
    Raises `StoreError` once retries are spent, `InvalidInputError` for a state over 400 KB.
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

    def ensure_schema(self) -> None:
        """Create the memory table if missing (the same table `DynamoDBMemoryStore` uses)."""
        ensure_table(self._table)

    def load(self, tenant_id: str, job: str) -> str | None:
        item = self._table.get_item(_key(tenant_id, job))
        return str(python_value(item["state"])) if item is not None and "state" in item else None

    def save(self, tenant_id: str, job: str, state: str) -> None:
        item = {
            **_key(tenant_id, job),
            "item_type": string_value("job_checkpoint"),
            "tenant_id": string_value(tenant_id),
            "job": string_value(job),
            "state": string_value(state),
            "saved_at": string_value(sortable_time(self._clock.now())),
        }
        check_item_size("state", item, f"the {job} checkpoint of tenant {tenant_id}")
        self._table.put_item(item)

    def delete(self, tenant_id: str, job: str) -> None:
        self._table.delete_item(_key(tenant_id, job))


def _key(tenant_id: str, job: str) -> dict[str, AttributeValueTypeDef]:
    return {"pk": string_value(checkpoint_pk(tenant_id, job)), "sk": string_value(CHECKPOINT_SK)}
