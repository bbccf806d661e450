"""`Lazy`: built once on first use, even under racing threads; an injected value is never rebuilt."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rearview.shared.lazy import Lazy


class Counter:
    """A build function that counts its calls and is slow enough for threads to race it."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.calls = 0
        self._delay_s = delay_s

    def __call__(self) -> object:
        self.calls += 1
        time.sleep(self._delay_s)
        return object()


def test_nothing_is_built_before_the_first_get_and_then_once():
    build = Counter()
    lazy = Lazy(build)
    assert not lazy.built and build.calls == 0
    first = lazy.get()
    assert lazy.built and lazy.get() is first and build.calls == 1


def test_racing_threads_share_one_build():
    build = Counter(delay_s=0.05)
    lazy = Lazy(build)
    start = threading.Barrier(8)

    def race() -> object:
        start.wait()
        return lazy.get()

    with ThreadPoolExecutor(8) as pool:
        values = list(pool.map(lambda _: race(), range(8)))
    assert build.calls == 1
    assert all(v is values[0] for v in values)


def test_an_injected_value_is_never_rebuilt():
    build = Counter()
    injected = object()
    lazy = Lazy(build, injected)
    assert lazy.built and lazy.get() is injected and build.calls == 0


def test_a_failed_build_is_retried_on_the_next_get():
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("no credentials yet")
        return "client"

    lazy = Lazy(flaky)
    with pytest.raises(OSError, match="no credentials yet"):
        lazy.get()
    assert not lazy.built
    assert lazy.get() == "client" and len(attempts) == 2
