"""The domain of Rearview, written once for every backend: a facade over four capabilities.

- `memory_service.MemoryService`: the facade every caller (MCP tools, CLI, UI, Lambda jobs) uses.
- `write/`: `memory_write` and `memory_summarize`: decide, then apply; merge safety; batches.
- `search/`: `memory_search`: the two channels, fusion and re-rank, collapse, the context block.
- `ingest/`: `memory_ingest`: a conversation's messages in, memories out (rules or a model).
- `lifecycle/`: the jobs (decay, retention, reconcile, TTL expiry), strength anchors, archival.

Cross-cutting, at this level: `config` (the tunables), `policy` (retention, reinforcement, decay),
`visibility` (who may see a memory), `history` (how a change is recorded), `indexing` and
`keyword_context` (upkeep of the derived index), `browsing`, `portability` (export/import),
`reindex` and `tenant_slots` (at most N ingests per tenant at a time).

Layers: the capabilities import the cross-cutting modules, `rearview.models`, `rearview.ports`
and each other only as their `__init__` says; nothing here imports `rearview.api`, `rearview.ui`,
`rearview.backends`, `rearview.cli` or a handler (`tests/unit/test_import_layers.py`).
"""
