"""What every embedder wrapper shares: the engine it wraps, and that engine's identity.

`BatchingEmbedder` and `PriorityEmbedder` change *when* an engine embeds, never *what*: they
answer for the wrapped engine's `model_id`, `dimension` and `status` (why a fallback runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rearview.ports import Embedder, Vector

__all__ = ["EmbedderWrapper", "QueryBatchEmbedder"]


class QueryBatchEmbedder(Embedder, Protocol):
    """An `Embedder` that can also embed several queries in one call."""

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """A (len(texts), dimension) matrix; row i is what `embed_query(texts[i])` returns."""


class EmbedderWrapper:
    """An embedder around `inner`: its vector space and status are the inner engine's."""

    def __init__(self, inner: QueryBatchEmbedder) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def status(self) -> str | None:
        """The inner engine's `status` (why a fallback runs), if it has one."""
        status = getattr(self._inner, "status", None)
        return status if isinstance(status, str) else None
