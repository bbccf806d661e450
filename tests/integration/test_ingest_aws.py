"""`memory_ingest` on the AWS stack: DynamoDB (moto, table from template.yaml) + a real OpenSearch node.

The unit tests run ingest on the in-memory doubles; here the chunked commits are DynamoDB
transactions and the chunk's index upserts (keyword context, neighbours rewritten once) are
OpenSearch bulk requests. A conversation longer than two chunks goes in whole, is searchable,
and a re-send creates nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import (
    ExtractionMode,
    IngestMessage,
    IngestRequest,
    MemoryFilter,
    MemoryStatus,
    MemoryType,
    SearchRequest,
)
from rearview.ports import MAX_WRITES_PER_COMMIT
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0

pytestmark = pytest.mark.opensearch

TURNS = 2 * MAX_WRITES_PER_COMMIT + 11
"""Messages in the conversation: more than two chunks."""


@pytest.fixture
def requests(dynamodb_client: Any) -> Counter[str]:
    """The DynamoDB operations the client sends, by name (a botocore event hook)."""
    sent: Counter[str] = Counter()
    dynamodb_client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: sent.update([model.name])
    )
    return sent


@pytest.fixture
def service(dynamodb_client: Any, dynamodb_table: str, opensearch_url: str) -> Iterator[MemoryService]:
    from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex

    clock = ManualClock(T0)
    config = OpenSearchConfig(
        endpoint=opensearch_url, dimension=64, mode="local", engine="lucene", replicas=0,
        refresh="true", alias=f"rv-ingest-{uuid4().hex[:8]}",
    )  # fmt: skip
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()
    store = DynamoDBMemoryStore(dynamodb_table, dynamodb_client, clock=clock)
    try:
        yield MemoryService(store, index, HashingEmbedder(64), clock)
    finally:
        index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404])


def conversation() -> IngestRequest:
    said = T0 - timedelta(days=1)
    messages = [
        IngestMessage(
            speaker="Ann" if i % 2 == 0 else "Bo",
            content=f"Turn {i}: we talked about topic{i} at length",
            timestamp=said + timedelta(minutes=i),
            message_id=f"d{i}",
        )
        for i in range(TURNS)
    ]
    messages[10] = messages[10].model_copy(update={"content": "I prefer aisle seats on long flights."})
    messages[41] = messages[41].model_copy(update={"content": "My sister's name is Jo."})
    return IngestRequest(messages=messages, session_id="trip")


def test_a_long_conversation_lands_whole_searchable_and_a_resend_creates_nothing(
    service: MemoryService, requests: Counter[str]
) -> None:
    request = conversation()
    requests.clear()
    result = service.ingest("t1", request)
    assert requests["GetItem"] == 0  # the call's idempotency keys are read at once (BatchGetItem)
    assert requests["TransactWriteItems"] == 3  # a commit per chunk, not per message

    assert result.mode is ExtractionMode.RULES and result.created == TURNS + 2
    assert [o.message_id for o in result.messages] == [f"d{i}" for i in range(TURNS)]
    assert result.messages[10].facts == ["Ann prefers aisle seats on long flights"]
    assert result.messages[41].facts == ["Bo's sister's name is Jo"]
    every = MemoryFilter(statuses=(MemoryStatus.ACTIVE,))
    stored = service.store.list_memories("t1", every, limit=200).items
    assert len(stored) == TURNS + 2 and service.index.count("t1") == TURNS + 2
    fact = next(m for m in stored if m.content == "Bo's sister's name is Jo")
    assert fact.type is MemoryType.SEMANTIC and fact.derived_from == [result.messages[41].memory_id]
    assert fact.metadata["speaker"] == "Bo"

    found = service.search("t1", SearchRequest(query="topic37", top_k=3, reinforce=False)).results
    assert found[0].id == result.messages[37].memory_id
    seats = service.search("t1", SearchRequest(query="aisle seats", top_k=5, reinforce=False)).results
    assert result.messages[10].memory_id in {h.id for h in seats} | {r for h in seats for r in h.related}

    requests.clear()
    again = service.ingest("t1", request)
    memories_read = math.ceil(2 * (TURNS + 2) / 100)  # each with its recall item, 100 keys a request
    assert requests == Counter({"BatchGetItem": 1 + memories_read})  # keys, then their memories
    assert (again.created, again.merged, again.superseded) == (0, 0, 0)
    assert [o.memory_id for o in again.messages] == [o.memory_id for o in result.messages]
    assert all(o.replayed for o in again.messages)
    assert service.index.count("t1") == TURNS + 2
