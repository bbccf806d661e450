"""The size budget of the Lambda dependency layer: build it exactly as `sam build` does, measure, judge.

    python -m infra.bundle_size [--python python3.13] [--budget-mb 125] [--keep DIR]
    python -m infra.bundle_size --built .aws-sam/build/DependenciesLayer

Runs `functions/Makefile`'s `build-DependenciesLayer` (the target `sam build` runs: Lambda arm64
wheels installed by `functions/install_layer.py`, then compiled to bytecode by the runtime's
Python 3.13) into a temporary directory, or measures a layer `sam build` already built
(`--built`). Prints the unzipped size of each top-level package, largest first, the share that
is bytecode, and the total. Exit 1 when the total is over the budget, or when a package with
native code (`.so`) is present that nothing imports: not our code (`functions/handlers`,
`functions/rearview`) and not another installed package. "Imports" is a textual `import X` /
`from X` match, which is what a lazy import or a conditional one also looks like; a native
package only a test or a tool would load still fails the check, as it should. Building needs
pip's network access to PyPI (or its configured index) and `make`.

The budget is 125 MB, not the 100 MB it once was: that figure was measured without the bytecode
the build adds on purpose (about 28 MB of `.pyc`, which halves import time on a cold start
because Lambda's code directory is read-only). Lambda's limit is 250 MB unzipped for a function
and all its layers together; each function adds about 2 MB of our code, so 125 MB keeps half of
the limit free. numpy (about 64 MB with its bundled OpenBLAS) is most of it, and the vector math
needs it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUR_CODE = (ROOT / "functions" / "handlers", ROOT / "functions" / "rearview")
MB = 1_000_000
BUDGET_MB = 125.0
"""See the module docstring: the built layer with its bytecode, half of Lambda's 250 MB limit."""
RUNTIME = (3, 13)
"""Lambda's Python: the layer's bytecode is compiled by, and only valid for, this version."""


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


def bytecode_bytes(target: Path) -> int:
    """Bytes of compiled bytecode (`.pyc`) under `target`."""
    return sum(p.stat().st_size for p in target.rglob("*.pyc") if p.is_file())


def report(target: Path, budget_mb: float) -> int:
    """Print the table and the verdict; 0 within budget and without unused native code, else 1."""
    measured = sizes(target)
    total = sum(measured.values())
    for name, size in sorted(measured.items(), key=lambda item: -item[1]):
        print(f"{size / MB:8.1f} MB  {name}")
    print(f"{bytecode_bytes(target) / MB:8.1f} MB  of it bytecode (.pyc)")
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


def runtime_python(named: str | None) -> str:
    """The Python 3.13 that compiles the layer: `named`, else `$PYTHON313`, else `python3.13` on PATH."""
    candidate = named or os.environ.get("PYTHON313") or shutil.which("python3.13")
    if candidate:
        probe = [candidate, "-c", "import sys; print(*sys.version_info[:2])"]
        found = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.split()  # noqa: S603
        if [int(part) for part in found] == list(RUNTIME):
            return candidate
    raise SystemExit(
        "bundle_size: the layer's bytecode is Python 3.13's (the Lambda runtime): pass --python "
        "with a python3.13 (or put one on PATH), as `make build` needs"
    )


def build(artifacts: Path, python: str) -> Path:
    """The layer as `sam build` makes it (functions/Makefile); returns its `python/` directory."""
    make = [
        "make", "--no-print-directory", "-C", str(ROOT / "functions"), "build-DependenciesLayer",
        f"ARTIFACTS_DIR={artifacts}", f"PYTHON={python}",
    ]  # fmt: skip
    subprocess.run(make, check=True)  # noqa: S603 - our Makefile
    return artifacts / "python"


def main(argv: Sequence[str] | None = None) -> int:
    """Build the layer into a temporary directory (or `--keep DIR`), or take `--built DIR`, and report."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budget-mb", type=float, default=BUDGET_MB)
    parser.add_argument("--python", help="the python3.13 that compiles the bytecode (default: python3.13)")
    parser.add_argument("--keep", type=Path, help="build into this directory and keep it")
    parser.add_argument(
        "--built", type=Path, help="measure this built layer (e.g. .aws-sam/build/DependenciesLayer)"
    )
    args = parser.parse_args(argv)
    if args.built:
        layer = args.built / "python" if (args.built / "python").is_dir() else args.built
        return report(layer, args.budget_mb)
    python = runtime_python(args.python)
    with tempfile.TemporaryDirectory(prefix="rearview-layer-") as scratch:
        artifacts = args.keep or Path(scratch)
        return report(build(artifacts.resolve(), python), args.budget_mb)


if __name__ == "__main__":
    sys.exit(main())
