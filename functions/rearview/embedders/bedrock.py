"""Amazon Bedrock `Embedder`: Titan Text Embeddings V2 through InvokeModel.

Request body `{"inputText": ..., "dimensions": 256|512|1024, "normalize": true}`; response body
`{"embedding": [...], "inputTextTokenCount": N}`. Vectors come back float32 and L2-normalized
(re-normalized here, so rounding never leaks into cosine scores). The vector space is named
`bedrock:<model id>:<dimension>` (`model_id`): vectors of another model or dimension never
share an index with these.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

from rearview.backends.bedrock_calls import call_bedrock, create_bedrock_client
from rearview.errors import EmbedderError, InvalidInputError
from rearview.ports import Vector
from rearview.shared.lazy import Lazy

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime.client import BedrockRuntimeClient

__all__ = ["DIMENSIONS", "MAX_INPUT_CHARS", "TITAN_V2", "BedrockTitanEmbedder"]

TITAN_V2: Final = "amazon.titan-embed-text-v2:0"
DIMENSIONS: Final = (256, 512, 1024)
MAX_INPUT_CHARS: Final = 50_000
"""Titan V2 accepts up to 8,192 tokens and 50,000 characters per input."""


class BedrockTitanEmbedder:
    """An `Embedder` on Amazon Titan Text Embeddings V2. The constructor does no I/O.

    - `dimension` must be 256, 512 or 1024 (`InvalidInputError` otherwise, at construction).
    - Throttling, model-not-ready and 5xx answers are retried by botocore (standard mode, see
      `rearview.backends.bedrock_calls`), at most `max_attempts` attempts in all; then `EmbedderError`.
      Anything else (access denied, validation, a vector of the wrong length) is an
      `EmbedderError` at once. An injected `client` brings its own retry configuration.
    - `embed_documents` runs up to `max_workers` requests at a time; a failure of any text
      fails the whole call (no partial matrix is returned).
    - `embed_query` keeps the last `cache_size` query vectors (LRU, per process; 0 disables).
    """

    def __init__(
        self,
        model_id: str = TITAN_V2,
        dimension: int = 1024,
        client: BedrockRuntimeClient | None = None,
        max_workers: int = 4,
        cache_size: int = 1024,
        *,
        max_attempts: int = 5,
    ) -> None:
        if dimension not in DIMENSIONS:
            raise InvalidInputError("dimension", f"Titan V2 has no {dimension}-d output", allowed=DIMENSIONS)
        if max_workers < 1:
            raise InvalidInputError("max_workers", f"must be at least 1 (got {max_workers})")
        if cache_size < 0:
            raise InvalidInputError("cache_size", f"must be >= 0 (got {cache_size})")
        self._model = model_id
        self._dimension = dimension
        self._client = Lazy(
            lambda: create_bedrock_client(read_timeout_s=30, max_attempts=max_attempts), client
        )
        self._max_workers = max_workers
        self._cache_size = cache_size
        self._lock = threading.Lock()  # guards the query cache and the worker pool
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None

    @property
    def model_id(self) -> str:
        """`bedrock:<model>:<dimension>`, e.g. `bedrock:amazon.titan-embed-text-v2:0:1024`."""
        return f"bedrock:{self._model}:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        """A (len(texts), dimension) float32 matrix, row i for texts[i]; identical texts embed once."""
        import numpy as np

        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        for text in unique:
            _check_text(text)
        if len(unique) <= 1 or self._max_workers == 1:
            vectors = [self._embed(t) for t in unique]
        else:
            vectors = list(self._executor().map(self._embed, unique))
        by_text = dict(zip(unique, vectors, strict=True))
        for row, text in enumerate(texts):
            out[row] = by_text[text]
        return out

    def embed_query(self, text: str) -> Vector:
        """A (dimension,) float32 vector; repeated query text is answered from the LRU cache."""
        _check_text(text)
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached.copy()
        vector = self._embed(text)
        if self._cache_size:
            with self._lock:
                self._cache[text] = vector
                self._cache.move_to_end(text)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return vector.copy()

    def close(self) -> None:
        """Stop the worker threads (idempotent); the embedder stays usable and restarts them."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="bedrock-embed")
            return self._pool

    def _embed(self, text: str) -> Vector:
        body = json.dumps({"inputText": text, "dimensions": self._dimension, "normalize": True})
        payload = self._invoke(body)
        return self._vector(payload)

    def _invoke(self, body: str) -> dict[str, Any]:
        out = call_bedrock(
            lambda: self._client.get().invoke_model(
                modelId=self._model, body=body, contentType="application/json", accept="application/json"
            ),
            error=EmbedderError,
            label=f"Bedrock InvokeModel({self._model})",
        )
        try:
            payload = json.loads(out["body"].read())
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"Bedrock InvokeModel({self._model}) failed: {exc}") from exc
        if not isinstance(payload, dict):
            raise EmbedderError(f"Bedrock {self._model} answered {type(payload).__name__}, not an object")
        return payload

    def _vector(self, payload: dict[str, Any]) -> Vector:
        import numpy as np

        embedding = payload.get("embedding")
        if not isinstance(embedding, list):
            raise EmbedderError(f"Bedrock {self._model} response has no `embedding` list")
        vector = np.asarray(embedding, dtype=np.float32)
        if vector.shape != (self._dimension,):
            raise EmbedderError(
                f"Bedrock {self._model} returned a {vector.size}-d vector; this embedder is "
                f"configured for {self._dimension} dimensions"
            )
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise EmbedderError(f"Bedrock {self._model} returned a zero or non-finite vector")
        result: Vector = vector / np.float32(norm)
        result.flags.writeable = False
        return result


def _check_text(text: str) -> None:
    if not text.strip():
        raise InvalidInputError("text", "must not be empty (Titan cannot embed empty input)")
    if len(text) > MAX_INPUT_CHARS:
        raise InvalidInputError(
            "text", f"is {len(text)} characters; Titan V2 accepts at most {MAX_INPUT_CHARS}"
        )
