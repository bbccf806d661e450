"""The ingest path: `memory_ingest`, a conversation's messages in, memories out.

- `ingester`: `Ingester`: each message as an episodic memory, plus what the extractor found,
  all through the write path (`write.batch`), so merges and supersedes behave as for writes.
- `extraction`: the `Extractor` port and `RulesExtractor`, the offline rules.
- `llm_extraction`: extraction by a language model, validated before anything is written.

May import: `write`, the cross-cutting service modules, `rearview.models`, `rearview.ports`.
"""
