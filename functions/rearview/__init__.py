"""Rearview: long-term memory for LLM agents, served as MCP tools over HTTP."""

__version__ = "0.1.0"
