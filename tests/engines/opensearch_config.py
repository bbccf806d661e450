"""The OpenSearch index settings the tests use against the test node (`opensearch_node`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import uuid4

if TYPE_CHECKING:
    from rearview.backends.opensearch import OpenSearchConfig

LOADED_HOST_TIMEOUT_S = 15.0
"""The engine's search timeout here: these tests check what the index answers, not how fast, and a
2-core host at load 8 took more than the 2 s default for a single search (issue 34.1)."""


def local_config(url: str, dimension: int, prefix: str, **overrides: Any) -> OpenSearchConfig:
    """One shard, no replica, refresh on every write, lucene HNSW, a fresh alias `<prefix>-<hex>`."""
    from rearview.backends.opensearch import OpenSearchConfig

    values: dict[str, Any] = {
        "endpoint": url,
        "dimension": dimension,
        "mode": "local",
        "engine": "lucene",
        "shards": 1,
        "replicas": 0,
        "refresh": "true",
        "alias": f"{prefix}-{uuid4().hex[:10]}",
        "timeout_s": LOADED_HOST_TIMEOUT_S,
    }
    return OpenSearchConfig(**{**values, **overrides})
