"""The machine a figure was measured on, and what a process has used of it (Linux `/proc`)."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({len(os.sched_getaffinity(0))} usable cores)"
    return "unknown"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
