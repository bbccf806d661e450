"""Bulk work's threads run below the process's priority; the caller's thread keeps its own."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from rearview.embedders.background import BACKGROUND_NICE, background_pool, lower_this_thread

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="threads have their own priority on Linux only"
)


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_background_pool_thread_runs_lowered_and_the_caller_does_not() -> None:
    normal = _nice()
    with background_pool(2, "bulk-test") as pool:
        name, nice = pool.submit(lambda: (threading.current_thread().name, _nice())).result()
    assert name.startswith("bulk-test")
    assert nice == min(19, normal + BACKGROUND_NICE)
    assert _nice() == normal


def test_lowering_is_per_thread_and_never_past_the_lowest_priority() -> None:
    seen: list[int] = []

    def twice() -> None:
        lower_this_thread()
        lower_this_thread()
        seen.append(_nice())

    before = _nice()
    thread = threading.Thread(target=twice)
    thread.start()
    thread.join()
    assert seen == [min(19, before + 2 * BACKGROUND_NICE)]
    assert _nice() == before
