"""The `rearview` command: serve MCP; import/export/ingest/search/stats/reindex; the lifecycle jobs.

`main` is the console script's entry point (`rearview = "rearview.cli:main"`); `parser` builds the
command line, and each command group has its module (`serve`, `files`, `queries`, `jobs`).
"""

from rearview.cli.parser import main

__all__ = ["main"]
