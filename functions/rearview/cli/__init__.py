"""The `rearview` command: serve MCP; import/export/ingest/search/stats/reindex; the lifecycle jobs.

`main` is the console script's entry point (`rearview = "rearview.cli:main"`); `parser` builds the
command line, and each command group has its module (`serve`, `files`, `queries`, `jobs`). The
files the commands read have theirs (`import_file`: `rearview import`'s JSON Lines; `ingest_file`:
a conversation for `rearview ingest`), and `console` is what any of them prints for a person.
"""

from rearview.cli.parser import main

__all__ = ["main"]
