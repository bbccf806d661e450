"""The search path: `memory_search`.

- `searcher`: `Searcher`, the two channels (keyword, vector) filtered inside the query, the
  degraded path, and the reinforcement a relevant recall earns.
- `ranking`: fusion of the channels' scores and the re-rank (the formula), composed of
  `ranking_policy` (every constant that shapes a score), `candidates` (what is ranked), `fusion`,
  `factors` (the re-rank factors) and `admission` (what is an answer; the similarity floor).
- `relevance`: the learned relevance, a calibrated probability that a candidate answers the query
  (its features and the fitted model, `relevance_model.json`).
- `collapse`: a memory extracted from a message and that message take one place.
- `rendering`: the context block returned for direct injection into a prompt.
- `store_search`: the degraded keyword scoring over the store when the index is down.

May import: the cross-cutting service modules, `rearview.models`, `rearview.ports`, `rearview.text`,
`rearview.text.bm25`; not `write`, `ingest` or `lifecycle`.
"""
