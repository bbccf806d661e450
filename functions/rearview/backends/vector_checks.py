"""The one check every index makes of the vectors it is given (`MemoryIndex.upsert`, `search`).

A vector is 1-D float32, of the index's dimension, and finite; cue and part vectors are rows of a
matrix, each checked as a vector. Anything else is an `InvalidInputError` naming `vector` before
anything is written, on every backend alike (tests/contract).
"""

from __future__ import annotations

from rearview.errors import InvalidInputError
from rearview.ports import Vector

__all__ = ["check_rows", "check_vector", "optional_rows"]


def check_vector(vector: Vector, dimension: int | None) -> Vector:
    """A 1-D finite float32 vector of `dimension` (None: any), or InvalidInputError naming `vector`."""
    import numpy as np

    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or (dimension is not None and arr.shape[0] != dimension):
        raise InvalidInputError("vector", f"has shape {arr.shape}; this index holds {dimension}-d vectors")
    if not np.isfinite(arr).all():
        raise InvalidInputError("vector", "contains NaN or infinite values")
    return arr


def check_rows(vectors: Vector, dimension: int | None) -> Vector:
    """A (rows, dimension) float32 matrix of `vectors` (cues', parts'), each row `check_vector`ed."""
    import numpy as np

    rows = [check_vector(v, dimension) for v in vectors]
    return np.stack(rows) if rows else np.zeros((0, dimension or 0), np.float32)


def optional_rows(vectors: Vector | None, dimension: int | None) -> Vector | None:
    """`check_rows` of `vectors`, None for None (a document that sends none keeps what it had)."""
    return None if vectors is None else check_rows(vectors, dimension)
