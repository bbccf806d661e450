"""benchmarks/recall/vector_shards.py: vectors computed once, kept in shards, read back exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from benchmarks.recall.vector_shards import ShardedVectors

from rearview.embedders.hashing import HashingEmbedder


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(384)
        self.texts = 0

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed_documents(texts)


def test_vectors_are_computed_once_saved_and_read_back(tmp_path: Path) -> None:
    engine = Counting()
    first = ShardedVectors("onnx", tmp_path, inner=engine)
    docs = first.embed_documents(["a note", "another note", "a note"])
    query = first.embed_query("which note?")
    assert engine.texts == 2  # the repeated text is embedded once
    first.save("q-1")
    first.save("q-1")  # nothing new: no shard
    assert [p.name for p in tmp_path.glob("*.npz")] == ["q-1.npz"]

    again = ShardedVectors("onnx", tmp_path, inner=Counting())
    assert again.has(["a note", "another note"]) and not again.has(["unseen"])
    np.testing.assert_array_equal(again.embed_documents(["a note", "another note", "a note"]), docs)
    np.testing.assert_array_equal(again.embed_query("which note?"), query)
    assert again.computed == 0


def test_a_shard_is_never_overwritten(tmp_path: Path) -> None:
    one = ShardedVectors("onnx", tmp_path, inner=Counting())
    one.embed_documents(["first"])
    one.save("q-1")
    two = ShardedVectors("onnx", tmp_path, inner=Counting())
    two.embed_documents(["second"])
    two.save("q-1")
    assert ShardedVectors("onnx", tmp_path, inner=Counting()).has(["first", "second"])
