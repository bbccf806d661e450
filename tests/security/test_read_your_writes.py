"""Read-your-writes on the AWS stack (issue 32.8): DynamoDB (moto) + a real OpenSearch node.

With the node's default refresh (1 s) and the old `refresh=false`, a search right after a write
missed it (10 of 10 in the hostile pass) and near-duplicate detection, which asks the index, could
not see it. With the default `REARVIEW_OPENSEARCH_REFRESH=wait_for` a write returns once it is
searchable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest

from rearview.backends.dynamodb import DynamoDBMemoryStore
from rearview.config.settings import Settings
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import SearchRequest, WriteAction, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.factories import T0

pytestmark = pytest.mark.opensearch


@pytest.fixture
def service(dynamodb_client: Any, dynamodb_table: str, opensearch_url: str) -> Iterator[MemoryService]:
    from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex

    clock = ManualClock(T0)
    refresh = Settings.model_fields["opensearch_refresh"].default  # what a deployment gets
    config = OpenSearchConfig(
        endpoint=opensearch_url, dimension=64, mode="local", engine="lucene", replicas=0,
        refresh=refresh, alias=f"rv-ryw-{uuid4().hex[:8]}",
    )  # fmt: skip
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()
    store = DynamoDBMemoryStore(dynamodb_table, dynamodb_client, clock=clock)
    try:
        yield MemoryService(store, index, HashingEmbedder(64), clock)
    finally:
        index.client.indices.delete(index=f"{config.alias}-v*", ignore=[404])


def test_a_write_is_searchable_and_seen_by_dedup_when_it_returns(service: MemoryService) -> None:
    for i in range(5):
        content = f"The quarterly report {i} is due on the {i + 3}th of the month"
        written = service.write("t1", WriteRequest(content=content))
        found = service.search("t1", SearchRequest(query=f"quarterly report {i} due", reinforce=False))
        assert written.memory.id in [h.id for h in found.results], f"write {i} not searchable at once"
        again = service.write("t1", WriteRequest(content=content + "."))
        assert again.action is WriteAction.MERGED and again.merged_into == written.memory.id
