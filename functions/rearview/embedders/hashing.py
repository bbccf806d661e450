"""A deterministic hashing embedder: fast, offline, no model; for tests and latency benchmarks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from rearview.ports import Vector
from rearview.text import tokens


class HashingEmbedder:
    """Feature-hashes tokens and character trigrams into a signed bag, then L2-normalizes.

    Same text, same vector, in every process. Texts sharing words get a positive cosine, so
    near-duplicate detection and the vector channel behave sensibly in tests.
    """

    def __init__(self, dimension: int = 256) -> None:
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"hashing:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        import numpy as np

        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed(text)
        return out

    def embed_query(self, text: str) -> Vector:
        return self._embed(text)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Row i is `embed_query(texts[i])` (queries and documents embed alike here)."""
        return self.embed_documents(texts)

    def _embed(self, text: str) -> Vector:
        import numpy as np

        vec = np.zeros(self._dimension, dtype=np.float32)
        toks = tokens(text)
        features = toks + [f"#{t[i : i + 3]}" for t in toks for i in range(max(1, len(t) - 2))]
        for feature in features:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self._dimension] += 1.0 if (value >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return vec / norm
