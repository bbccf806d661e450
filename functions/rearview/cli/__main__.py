"""`python -m rearview.cli`: the `rearview` command."""

from rearview.cli.parser import main

raise SystemExit(main())
