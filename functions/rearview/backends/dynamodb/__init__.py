"""DynamoDB adapters: the memory store and the lifecycle checkpoint store, on one table.

Modules, by seam:

- `keys`: key construction and escaping (every partition under its tenant);
- `codec`: items ↔ `Memory` / `HistoryEvent` (also used by the stream consumer);
- `expressions`: condition and filter expressions, bound to descriptive names;
- `listing`: index choice, queries, cursors and pagination for `list_memories()`;
- `schema`: `table_definition()` (mirrors `template.yaml`) and `ensure_table()`;
- `table_client`: SDK calls, error translation and bounded retries;
- `writes`: the transaction of one commit and what a cancelled one means;
- `recall`: a memory's recall bookkeeping on a small item of its own (what a search writes);
- `store`: `DynamoDBMemoryStore`; `checkpoints`: `DynamoDBCheckpointStore`.
"""

from rearview.backends.dynamodb.checkpoints import DynamoDBCheckpointStore
from rearview.backends.dynamodb.codec import (
    MAX_ITEM_BYTES,
    is_memory_item,
    item_size,
    memory_from_item,
    memory_to_item,
)
from rearview.backends.dynamodb.schema import GSI_SESSION, GSI_TENANT, GSI_TYPE_STATUS, table_definition
from rearview.backends.dynamodb.store import DynamoDBMemoryStore
from rearview.backends.dynamodb.writes import MAX_TRANSACTION_ITEMS
from rearview.shared.retry import RetryPolicy

__all__ = [
    "GSI_SESSION",
    "GSI_TENANT",
    "GSI_TYPE_STATUS",
    "MAX_ITEM_BYTES",
    "MAX_TRANSACTION_ITEMS",
    "DynamoDBCheckpointStore",
    "DynamoDBMemoryStore",
    "RetryPolicy",
    "is_memory_item",
    "item_size",
    "memory_from_item",
    "memory_to_item",
    "table_definition",
]
