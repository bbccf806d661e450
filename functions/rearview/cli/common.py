"""What every command shares: the exit statuses, the `--tenant` default.

A command module adds its options to the parser `build_parser` hands it (`add_*`) and sets
`func`: `func(settings, args)` runs the command and returns its exit status.
"""

from __future__ import annotations

import argparse

from rearview.config.settings import Settings

LOCAL_TENANT_HELP = "tenant to act on (default: the configured default tenant)"


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = """exit status:
  0    success
  1    runtime error: a backend failed, a file could not be read,
       an import skipped a line or stopped at one
  2    usage error: bad arguments, settings (REARVIEW_*) or config file
  3    a lifecycle job stopped at its --budget-s, or cues at its bound per run
       (the next run resumes)
  130  interrupted (Ctrl-C)"""


def tenant_of(settings: Settings, args: argparse.Namespace) -> str:
    """The tenant a local command acts on: `--tenant`, else the configured default tenant."""
    return str(args.tenant or settings.default_tenant)
