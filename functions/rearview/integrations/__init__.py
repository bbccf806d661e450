"""Rearview as the long-term memory of agent frameworks, each adapter in a module named after its framework.

- `rearview.integrations.langgraph`: `RearviewStore`, a LangGraph `BaseStore` (`rearview[langgraph]`),
  with how it keeps an item in a memory (`langgraph_items`) and LangGraph's filters (`langgraph_filters`);
- `rearview.integrations.strands`: `RearviewMemoryHooks` and the `remember`/`recall` tools for
  Strands Agents (install `strands-agents` beside Rearview: docs/integrations.md says how).

Each adapter is built on the Python API (`rearview.client.Memory`) and the models only, so it runs
embedded or against a server alike, and imports its framework only when it is itself imported:
nothing here loads at `import rearview`.
"""
