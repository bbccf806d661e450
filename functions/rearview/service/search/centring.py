"""A search's query vector with its script's mean question taken out.

e5 gives every text of one script a large shared direction: an English question scores English
memories above the Chinese one that answers it, and scores memories that read like any question
above the one that answers this one. `QueryCentring.apply` subtracts `weight` times the mean
`query: ` embedding of the baseline's background statements in the query's script
(`baseline.BACKGROUND_LATIN` / `BACKGROUND_CJK`, the same texts that give each query its zero) and
renormalises: the language-neutral centring of multilingual encoders (Libovický et al., 2020), on
the query side only.

Only the search's query moves. Memories' vectors are as indexed, so nothing needs reindexing, the
index's k-NN ranks by the centred query directly on either backend, and what compares memories with
each other (merges, near duplicates, conflicts) keeps its scale. The baselines are taken with the
centred query too (`Searcher`), so a cosine is still judged against unrelated text in its own scale.

The two means are embedded once per embedder, on first use (48 query embeddings). weight 0: the
query as embedded; e5: bootstrap's `QUERY_CENTRINGS` (chosen with benchmarks/recall/
document_views.py --centrings).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rearview.ports import Embedder, Vector, query_views_of
from rearview.service.search.baseline import BACKGROUND_CJK, BACKGROUND_LATIN, script_of


class QueryCentring:
    """`apply(texts, vectors)`: each query vector less `weight` x its script's mean question."""

    def __init__(self, embedder: Embedder, weight: float) -> None:
        self._embedder = embedder
        self.weight = weight
        self._lock = threading.Lock()
        self._means: Vector | None = None

    def apply(self, texts: Sequence[str], vectors: Vector) -> Vector:
        """Row i of `vectors` (`texts[i]`'s query embedding) centred on its script's mean, unit length.

        `vectors` itself when `weight` is 0. Raises what the embedder raises (`EmbedderError`) on
        the first call, which embeds the means.
        """
        if self.weight == 0.0:
            return vectors
        import numpy as np

        means = self._background_means()
        rows = np.asarray(vectors, dtype=np.float32) - self.weight * means[[script_of(t) for t in texts]]
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        centred: Vector = (rows / np.where(norms > 0.0, norms, 1.0)).astype(np.float32)
        return centred

    def _background_means(self) -> Vector:
        """(2, dim): the mean query embedding of the Latin background (row 0) and the CJK one (row 1)."""
        import numpy as np

        with self._lock:
            if self._means is None:
                matrix = np.asarray(
                    query_views_of(self._embedder, [*BACKGROUND_LATIN, *BACKGROUND_CJK]), dtype=np.float32
                )
                n = len(BACKGROUND_LATIN)
                self._means = np.stack([matrix[:n].mean(axis=0), matrix[n:].mean(axis=0)])
            return self._means
