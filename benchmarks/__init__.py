"""Rearview's benchmarks, grouped by what they measure.

- `recall`: retrieval quality (LoCoMo, the everyday set, small tenants, the relevance model, merges);
- `speed`: latency and throughput (search, concurrent search, writes, ingest, reindex, lifecycle,
  cold start);
- `cost`: what an operation costs in CPU or requests (embeddings, DynamoDB round trips);
- `fairness`: one tenant's latency beside another tenant's load or volume;
- `common`: the setup they share (paths, the machine, timing, a served process, the data sets).

Each script runs from the repository root as
`PYTHONPATH=functions:. .venv/bin/python benchmarks/<group>/<name>.py`; see benchmarks/README.md.
"""
