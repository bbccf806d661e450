"""What the benchmark groups share, in one place.

- `paths`: the repository root, `benchmarks/results/` (git-ignored) and `../shared/data/`;
- `machine`: the CPU a figure was measured on, the load average, a process's CPU seconds;
- `timing`: percentiles of a series of timings (`Latency`, `percentile`) and thread CPU per call;
- `server`: a free loopback port and `rearview serve` as a child process (`serving`);
- `locomo`: the LoCoMo data set as the recall, speed and cost benchmarks read it, and a fresh
  embedded SQLite service to write it into;
- `synthetic_memories`: one tenant's varied synthetic memories and queries (speed, cost, fairness);
- `local_embedders`: the two local engines built as `rearview serve` builds them.

Importing this package or `paths`, `machine`, `timing` and `server` loads the standard library
only (numpy on first use): `speed/cold_start.py` times `import handlers.mcp` in a fresh process that
runs its own module first, and must not find numpy already loaded. Import from the modules
(`from benchmarks.common.timing import Latency`); this package re-exports nothing.
"""
