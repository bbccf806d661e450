"""Rearview: long-term memory for LLM agents, served as MCP tools over HTTP.

`from rearview import Memory` is the Python API (`rearview.client`). It is resolved on first access,
so `import rearview` (every Lambda's init) stays as light as this file.
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
