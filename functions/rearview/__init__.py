"""Rearview: long-term memory for LLM agents, served as MCP tools over HTTP.

`from rearview import Memory` is the Python API (`rearview.client`). It is resolved on first access,
so `import rearview` (every Lambda's init) stays as light as this file.

The package root shows the layers, lowest first; a module imports its own layer and the ones below
(`tests/unit/test_import_layers.py`):

0. the domain contract, kept at the root because every other layer reads it first and callers
   import it (`rearview.models`, `rearview.errors`): `models/`, `limits.py`, `errors.py`, `ports/`;
   beside it the helpers any layer may use: `shared/` (clock, ids, retries, ...) and `text/`
   (tokens, FTS5 terms, BM25).
1. the ports' adapters: `backends/`, `embedders/`.
2. the domain, once for every backend: `service/`.
3. other systems' exports through the write path (`importers/`); the configuration (`config/`).
4. the MCP app (`api/`), the memory browser (`ui/`), the shipped test doubles (`testing.py`).
5. the composition root, the one place that picks adapters: `bootstrap.py`.
6. the `rearview` command (`cli/`) and the Python API (`client/`).
7. framework adapters on the Python API: `integrations/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rearview.client import Memory

__version__ = "0.1.0"
__all__ = ["Memory", "__version__"]


def __getattr__(name: str) -> object:
    """`Memory`, imported when first asked for (PEP 562); any other name is an AttributeError."""
    if name == "Memory":
        from rearview.client import Memory

        return Memory
    raise AttributeError(f"module 'rearview' has no attribute {name!r}")
