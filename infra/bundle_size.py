"""The size budget of the Lambda dependency layer: build it as `sam build` does, measure, judge.

    python -m infra.bundle_size [--budget-mb 100] [--keep DIR]

Installs `functions/requirements.txt` for Lambda (arm64, CPython 3.13 wheels, any build machine)
with `functions/install_layer.py` into a temporary directory, then prints the unzipped size of each
top-level package, largest first, and the total. Exit 1 when the total is over the budget, or
when a package with native code (`.so`) is present that nothing imports: not our code
(`functions/handlers`, `functions/rearview`) and not another installed package. "Imports" is a
textual `import X` / `from X` match, which is what a lazy import or a conditional one also looks
like; a native package only a test or a tool would load still fails the check, as it should.
Needs pip's network access to PyPI (or its configured index).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from functions import install_layer

ROOT = Path(__file__).resolve().parents[1]
OUR_CODE = (ROOT / "functions" / "handlers", ROOT / "functions" / "rearview")
MB = 1_000_000
BUDGET_MB = 100.0


def top_level(entry: str) -> str:
    """The import name an entry of site-packages belongs to (`numpy.libs` -> numpy, `six.py` -> six)."""
    if entry.endswith(".dist-info"):
        return "*.dist-info (metadata)"
    name = entry.split(".", 1)[0]
    return name.removesuffix(".libs")


def sizes(target: Path) -> dict[str, int]:
    """Bytes on disk, unzipped, per top-level name (all metadata on one row)."""
    totals: dict[str, int] = defaultdict(int)
    for path in target.rglob("*"):
        if path.is_file():
            totals[top_level(path.relative_to(target).parts[0])] += path.stat().st_size
    return dict(totals)


def native_packages(target: Path) -> set[str]:
    """Top-level import names that ship compiled extension modules."""
    return {top_level(p.relative_to(target).parts[0]) for p in target.rglob("*.so")}


def imported_names(sources: Iterable[Path], exclude: Path | None = None) -> set[str]:
    """Top-level module names that `import` / `from ... import` statements in `sources` name."""
    pattern = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
    found: set[str] = set()
    for root in sources:
        for path in root.rglob("*.py"):
            if exclude is not None and path.is_relative_to(exclude):
                continue
            found |= set(pattern.findall(path.read_text(encoding="utf-8", errors="replace")))
    return found


def unimported_native(target: Path) -> list[str]:
    """Native packages in `target` that neither our code nor any other installed package imports."""
    unused = []
    for name in sorted(native_packages(target)):
        others = [*OUR_CODE, *(p for p in target.iterdir() if p.is_dir() and top_level(p.name) != name)]
        if name not in imported_names(others):
            unused.append(name)
    return unused


def report(target: Path, budget_mb: float) -> int:
    """Print the table and the verdict; 0 within budget and without unused native code, else 1."""
    measured = sizes(target)
    total = sum(measured.values())
    for name, size in sorted(measured.items(), key=lambda item: -item[1]):
        print(f"{size / MB:8.1f} MB  {name}")
    print(f"{total / MB:8.1f} MB  total, unzipped (budget {budget_mb:.0f} MB)")
    failures = []
    if total > budget_mb * MB:
        failures.append(f"over budget by {(total - budget_mb * MB) / MB:.1f} MB")
    unused = unimported_native(target)
    if unused:
        failures.append(f"native packages nothing imports: {', '.join(unused)}")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Build the layer's packages into a temporary directory (or `--keep DIR`) and report."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budget-mb", type=float, default=BUDGET_MB)
    parser.add_argument("--keep", type=Path, help="build into this directory and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rearview-layer-") as scratch:
        target = args.keep or Path(scratch)
        install_layer.install(target, ROOT / "functions" / "requirements.txt")
        return report(target, args.budget_mb)


if __name__ == "__main__":
    sys.exit(main())
