"""The write path: `memory_write` and `memory_summarize`.

- `writer`: `Writer.decide` (merge | supersede | create, from the store, the index and the
  contradiction judge) then `Writer.apply`; scope and idempotency keys. `decision`: what a write
  means (`Merge` | `Supersede` | `Create`) and the `Draft` it is decided on; `records`: the new or
  merged memory it stores.
- `merge_safety`: what a near-duplicate merge may not drop (numbers, dates, names, negations);
  `fact_patterns`: the word tables and the regex it finds them with.
- `batch`: `WriteBatch`, many decided writes committed and indexed together (ingest, import).
- `consolidation`: the optional language model: abstractive summaries, contradiction judgements.
- `summarize`: the extractive summary used without (or after a failure of) that model.
- `secrets`: obvious credentials in content, refused (or warned about) before anything is written.

May import: the cross-cutting service modules, `rearview.models`, `rearview.ports`, `rearview.text`.
"""
