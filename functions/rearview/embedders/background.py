"""Bulk embedding runs at background priority, so an interactive call gets the CPU first.

On a small host (2 cores) one tenant's ingest, import or long texts kept every core busy and another
tenant's short search waited for its share of them: the fair lanes bound how many calls run, not
whose thread the kernel runs next. Threads that embed bulk work are started here with a nice value
`BACKGROUND_NICE` above the process's (Linux gives each thread its own): against a normal thread
the kernel gives such a thread about a tenth of a contended core, and all of an idle one, so bulk
work alone runs as fast as before and a query arriving beside it gets a core first.

Elsewhere (macOS and Windows set priority per process, not per thread), or where the kernel refuses,
the threads run at normal priority: nothing else changes.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Final

__all__ = ["BACKGROUND_NICE", "background_pool", "lower_this_thread"]

BACKGROUND_NICE: Final = 10
"""Nice steps below the process: CFS weighs a nice-10 thread 110 against a nice-0 thread's 1024."""
_LOWEST: Final = 19


def lower_this_thread() -> None:
    """Put the calling thread `BACKGROUND_NICE` below the process's priority (Linux; else nothing)."""
    if sys.platform != "linux":
        return
    thread = threading.get_native_id()
    with suppress(OSError):  # a sandbox without setpriority: the thread stays at normal priority
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(_LOWEST, nice + BACKGROUND_NICE))


def background_pool(workers: int, name: str) -> ThreadPoolExecutor:
    """A pool of `workers` threads, each lowered by `lower_this_thread` when it starts."""
    return ThreadPoolExecutor(workers, thread_name_prefix=name, initializer=lower_this_thread)
