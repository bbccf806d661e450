"""What the reads over a tenant answer: its counts (`memory_stats`) and a page of a listing."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from rearview.models.memory import Memory


class StoreStats(BaseModel):
    """Counts a store can answer for one tenant without scanning other tenants."""

    model_config = ConfigDict(defer_build=True)

    total: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    oldest: datetime | None = None
    newest: datetime | None = None


class Stats(StoreStats):
    """Output of `memory_stats`."""

    embedding_model: str
    embedder_status: str | None = None
    """Set when the embedder runs in a fallback: why (e.g. the ONNX embedder failed its check)."""
    index_documents: int | None = None


class Page(BaseModel):
    """One page of a listing; pass `cursor` back to get the next, None when done."""

    model_config = ConfigDict(defer_build=True)

    items: list[Memory]
    cursor: str | None = None
