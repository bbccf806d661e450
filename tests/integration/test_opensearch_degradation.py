"""Memory is an enhancement: with the OpenSearch engine gone, search degrades and writes still land."""

from __future__ import annotations

import time

import pytest

from rearview.backends.memory import InMemoryMemoryStore
from rearview.backends.opensearch import OpenSearchConfig, OpenSearchMemoryIndex
from rearview.embedders.hashing import HashingEmbedder
from rearview.models import SearchRequest, WriteRequest
from rearview.service.memory_service import MemoryService
from rearview.shared.clock import ManualClock
from tests.engines.opensearch_node import OpenSearchNode
from tests.factories import T0


@pytest.mark.opensearch
def test_engine_stopped_mid_test_degrades_search_and_keeps_writes(
    disposable_opensearch_node: OpenSearchNode,
) -> None:
    config = OpenSearchConfig(
        endpoint=disposable_opensearch_node.url,
        dimension=64,
        mode="local",
        engine="lucene",
        replicas=0,
        refresh="true",
        alias="rv-degrade",
        timeout_s=5.0,  # the healthy searches must not time out on a loaded host
    )
    index = OpenSearchMemoryIndex(config)
    index.ensure_schema()
    clock = ManualClock(T0)
    service = MemoryService(InMemoryMemoryStore(clock), index, HashingEmbedder(64), clock)
    tea = service.write("t1", WriteRequest(content="The user drinks green tea every morning")).memory.id
    healthy = service.search("t1", SearchRequest(query="green tea"))
    assert not healthy.degraded and healthy.results[0].id == tea

    disposable_opensearch_node.kill()

    written = service.write("t1", WriteRequest(content="The user's cat is called Miso"))
    assert written.indexed is False
    assert service.get("t1", written.memory.id).content == "The user's cat is called Miso"
    started = time.monotonic()
    result = service.search("t1", SearchRequest(query="green tea"))
    assert time.monotonic() - started < config.timeout_s + 5  # a refused connection fails fast
    assert result.degraded and "index unavailable" in (result.degraded_reason or "")
    assert [h.id for h in result.results][:1] == [tea]
    assert service.search("t1", SearchRequest(query="cat Miso")).results[0].id == written.memory.id
