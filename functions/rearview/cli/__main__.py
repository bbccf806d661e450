"""`python -m rearview.cli`: the `rearview` command (imported by a package walk, it runs nothing)."""

from rearview.cli.parser import main

if __name__ == "__main__":
    raise SystemExit(main())
