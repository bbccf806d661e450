"""`PriorityEmbedder`: document batches in chunks, and a waiting query goes before the next chunk."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from rearview.embedders.hashing import HashingEmbedder
from rearview.embedders.priority import PriorityEmbedder
from rearview.errors import InvalidInputError
from rearview.ports import Vector


class RecordingEngine:
    """A hashing engine that records its calls and takes `delay` seconds per document call."""

    def __init__(self, delay: float = 0.0, reentrant: bool = False) -> None:
        self._inner = HashingEmbedder(64)
        self._delay = delay
        self._lock = threading.Lock() if not reentrant else None
        self.calls: list[tuple[str, int]] = []
        self.overlaps = 0
        self.document_overlaps = 0
        self._active = 0
        self._documents = 0
        self._guard = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def _enter(self, kind: str, n: int) -> None:
        with self._guard:
            self._active += 1
            self.overlaps += self._active > 1
            if kind == "documents":
                self._documents += 1
                self.document_overlaps += self._documents > 1
            self.calls.append((kind, n))

    def _leave(self, kind: str) -> None:
        with self._guard:
            self._active -= 1
            self._documents -= kind == "documents"

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self._enter("documents", len(texts))
        try:
            time.sleep(self._delay)
            return self._inner.embed_documents(texts)
        finally:
            self._leave("documents")

    def embed_query(self, text: str) -> Vector:
        self._enter("query", 1)
        try:
            return self._inner.embed_query(text)
        finally:
            self._leave("query")

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        self._enter("query", len(texts))
        try:
            return self._inner.embed_queries(texts)
        finally:
            self._leave("query")


def test_documents_go_in_chunks_of_at_most_chunk_chars_with_the_same_vectors() -> None:
    engine = RecordingEngine()
    wrapped = PriorityEmbedder(engine, exclusive=True, chunk_chars=100)
    texts = [f"message {i} " + "x" * 40 for i in range(9)] + ["y" * 600]  # over `express_chars` together
    out = wrapped.embed_documents(texts)
    assert np.array_equal(out, HashingEmbedder(64).embed_documents(texts))
    sizes = [n for kind, n in engine.calls]
    assert sum(sizes) == len(texts) and max(sizes) == 2 and sizes[-1] == 1  # a long text alone


def test_a_query_waits_for_at_most_the_running_chunk_on_an_exclusive_engine() -> None:
    engine = RecordingEngine(delay=0.05)
    wrapped = PriorityEmbedder(engine, exclusive=True, chunk_chars=10, express_chars=100)
    texts = [f"doc {i:04d}" for i in range(40)]  # 40 chunks of one text: 2 s in all
    ingest = threading.Thread(target=wrapped.embed_documents, args=(texts,))
    ingest.start()
    time.sleep(0.12)
    started = time.monotonic()
    wrapped.embed_query("where is the staging server?")
    waited = time.monotonic() - started
    ingest.join()
    assert waited < 0.5  # one chunk is 0.05 s; behind the whole batch it would be ~1.9 s
    assert engine.overlaps == 0  # the engine never ran two calls at once
    first_query = engine.calls.index(("query", 1))
    assert 2 <= first_query < 10


def test_queries_never_wait_on_a_reentrant_engine_and_chunks_run_one_at_a_time() -> None:
    engine = RecordingEngine(delay=0.05, reentrant=True)
    wrapped = PriorityEmbedder(engine, exclusive=False, chunk_chars=10, express_chars=100)
    texts = [f"doc {i:04d}" for i in range(20)]
    ingests = [threading.Thread(target=wrapped.embed_documents, args=(texts,)) for _ in range(2)]
    for thread in ingests:
        thread.start()
    time.sleep(0.08)
    started = time.monotonic()
    for _ in range(5):
        wrapped.embed_query("q")
    waited = time.monotonic() - started
    for thread in ingests:
        thread.join()
    assert waited < 0.05
    assert engine.overlaps >= 1  # queries ran beside a chunk
    assert engine.document_overlaps == 0  # two concurrent ingests, one chunk in the engine at a time
    assert sum(n for kind, n in engine.calls if kind == "documents") == 40


def test_chunk_chars_must_be_positive() -> None:
    with pytest.raises(InvalidInputError, match="chunk_chars"):
        PriorityEmbedder(RecordingEngine(), exclusive=True, chunk_chars=0)


class GatedEngine(RecordingEngine):
    """A re-entrant engine whose chunks of `x` texts each wait for one `permits.release()` (none: held)."""

    def __init__(self) -> None:
        super().__init__(reentrant=True)
        self.permits = threading.Semaphore(0)
        self.order: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        self.order.append(texts[0][:2])
        if texts[0].startswith("x"):
            assert self.permits.acquire(timeout=10), "the test never let the chunk through"
        return super().embed_documents(texts)


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the embedder"
        time.sleep(0.001)


def test_chunks_take_turns_first_come_first_served() -> None:
    """Issue 33.3: the thread that just ran a chunk took the turn again ahead of one already waiting."""
    engine = GatedEngine()
    wrapped = PriorityEmbedder(engine, exclusive=False, chunk_chars=10, express_chars=0)
    ingest = threading.Thread(target=wrapped.embed_documents, args=([f"x{i}-------" for i in range(4)],))
    ingest.start()
    _until(lambda: engine.order == ["x0"])
    write = threading.Thread(target=wrapped.embed_documents, args=(["y0 a memory"],))  # ungated
    write.start()
    _until(lambda: wrapped._tickets == 2)  # the write's chunk waits for its turn
    for _ in range(4):
        engine.permits.release()
    ingest.join(10)
    write.join(10)
    assert engine.order == ["x0", "y0", "x1", "x2", "x3"]


@pytest.mark.parametrize(
    "write",
    [
        ["The user prefers green tea"],
        # one memory_write with its recall cues: a few queries' worth, not an ingest's chunk
        ["The user prefers green tea", "what does the user drink?", "用户喝什么茶？", "tea preference"],
    ],
)
def test_one_writes_texts_go_as_a_query_and_wait_for_no_chunk(write: list[str]) -> None:
    engine = GatedEngine()
    wrapped = PriorityEmbedder(engine, exclusive=False, chunk_chars=10)
    ingest_texts = [f"x{i}" + "-" * 600 for i in range(3)]  # over `express_chars` together
    ingest = threading.Thread(target=wrapped.embed_documents, args=(ingest_texts,))
    ingest.start()
    _until(lambda: engine.order == ["x0"])  # a chunk is held inside the engine
    out = wrapped.embed_documents(write)
    assert np.array_equal(out, HashingEmbedder(64).embed_documents(write))
    assert engine.order == ["x0", "Th"]
    for _ in range(3):
        engine.permits.release()
    ingest.join(10)
    assert engine.order == ["x0", "Th", "x1", "x2"]


def test_stored_texts_embedded_as_queries_go_in_document_chunks_with_the_query_vectors() -> None:
    engine = RecordingEngine()
    wrapped = PriorityEmbedder(engine, exclusive=True, chunk_chars=100, express_chars=200)
    texts = [f"memory {i} " + "x" * 40 for i in range(9)]  # a reindex's batch, over `express_chars`
    out = wrapped.embed_query_views(texts)
    assert np.array_equal(out, HashingEmbedder(64).embed_queries(texts))
    sizes = [n for _, n in engine.calls]
    assert sum(sizes) == len(texts) and max(sizes) == 2  # chunked as documents are, not one query call
