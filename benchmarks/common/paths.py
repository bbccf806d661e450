"""Where benchmarks read data and write results, whichever group folder a script sits in."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "benchmarks" / "results"
"""Results, caches and written databases: git-ignored."""
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
"""Data sets that must not be committed here (LoCoMo is CC BY-NC; the everyday set)."""
