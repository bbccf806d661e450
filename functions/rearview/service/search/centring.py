"""A search's query vector with its script's mean question taken out.

e5 gives every text of one script a large shared direction: an English question scores English
memories above the Chinese one that answers it, and scores memories that read like any question
above the one that answers this one. `centred` subtracts `weight` times the mean `query: `
embedding of the baseline's background statements in the query's script
(`baseline.Baselines.question_means`, the same texts that give each query its zero) and
renormalises: the language-neutral centring of multilingual encoders (Libovický et al., 2020), on
the query side only.

Only the search's query moves. Memories' vectors are as indexed, so nothing needs reindexing, the
index's k-NN ranks by the centred query directly on either backend, and what compares memories with
each other (merges, near duplicates, conflicts) keeps its scale. The baselines are taken with the
centred query too (`Searcher`), so a cosine is still judged against unrelated text in its own scale.

The two means are embedded once per embedder, on first use (48 query embeddings, `Baselines`).
weight 0: the query as embedded; e5: bootstrap's `QUERY_CENTRINGS` (chosen with benchmarks/recall/
document_views.py --centrings).
"""

from __future__ import annotations

from collections.abc import Sequence

from rearview.ports import Vector
from rearview.service.search.baseline import script_of


def centred(texts: Sequence[str], vectors: Vector, means: Vector, weight: float) -> Vector:
    """Row i of `vectors` (`texts[i]`'s query embedding) less `weight` x its script's mean, unit length.

    `means`: `Baselines.question_means`, indexed by `script_of`.
    """
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float32) - weight * means[[script_of(t) for t in texts]]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vector = (rows / np.where(norms > 0.0, norms, 1.0)).astype(np.float32)
    return out
