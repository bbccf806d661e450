"""Install the functions' dependencies for Lambda (CPython 3.13, arm64 or x86_64) into a directory.

    python3.13 install_layer.py TARGET [--requirements requirements.txt]
                                       [--architecture arm64|x86_64 | --template template.yaml]

Two pip steps: resolve `requirements.txt` for the Lambda platform (`pip install --dry-run
--report`), then install exactly the resolved versions with `--no-deps`, leaving out `LEFT_OUT`.
pip cannot drop a dependency of a dependency any other way. Then every `.so` in TARGET is checked
to be native code for the architecture asked for (exit 1 otherwise): a layer built for the wrong
machine would only fail at the first import in AWS.

The architecture is the template's (`Architectures` of the functions, which must agree with the
layer's `BuildArchitecture` and `CompatibleArchitectures`), so `template.yaml` stays its one
source of truth: `functions/Makefile` passes the template being built (`$REARVIEW_TEMPLATE`, else
the repository's); `--architecture` overrides it. Standard library only: SAM runs this from its
scratch copy of `functions/` (`make build-DependenciesLayer`), and `infra/bundle_size.py` runs it
to measure the layer.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ARCHITECTURES = ("arm64", "x86_64")
PLATFORMS = {
    "arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
}
"""pip `--platform` tags of each Lambda architecture (Lambda's Amazon Linux 2023 has glibc 2.34)."""
ELF_MACHINES = {"arm64": 183, "x86_64": 62}
"""ELF `e_machine` of each architecture (EM_AARCH64, EM_X86_64)."""
DEFAULT_TEMPLATE = Path(__file__).resolve().parent.parent / "template.yaml"
PYTHON_VERSION = "3.13"
PIP = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
LEFT_OUT = {
    "opensearch-protobufs": "unused: opensearch-py 3 requires it for a gRPC client nothing imports",
    "grpcio": "unused: needed by opensearch-protobufs only (about 30 MB of native code)",
    "protobuf": "unused: needed by opensearch-protobufs only",
    "boto3": "provided by the Lambda Python runtime (as in Powertools' own layer)",
    "botocore": "provided by the Lambda Python runtime (21 MB, mostly service models)",
    "s3transfer": "provided by the Lambda Python runtime (boto3's)",
}
"""Distributions the resolver brings in that the layer leaves out, and why.

boto3 and botocore come from the runtime (`/var/runtime`, after the layer on `sys.path`): the
deployed code then runs on AWS's current SDK, not on the version pinned here; tests and
`rearview serve` still use the pinned one. Without them the layer fits the 100 MB budget
(`infra/bundle_size.py`).
"""


class ArchitectureError(Exception):
    """The template's architectures disagree, or the layer holds native code for another machine."""


def template_architecture(template: Path) -> str:
    """The one architecture `template` builds for; raises `ArchitectureError` when it names several.

    Reads, as text (no YAML parser in the standard library), every `Architectures: [..]`,
    `CompatibleArchitectures: [..]` and `BuildArchitecture: ..` of the template.
    """
    text = template.read_text(encoding="utf-8")
    lists = re.findall(r"^\s*(?:Compatible)?Architectures:\s*\[([^\]]*)\]", text, re.MULTILINE)
    singles = re.findall(r"^\s*BuildArchitecture:\s*([\w-]+)", text, re.MULTILINE)
    named = [a.strip().strip("\"'") for item in lists for a in item.split(",")] + singles
    found = set(named)
    if len(found) != 1 or not found <= set(ARCHITECTURES):
        raise ArchitectureError(
            f"{template}: expected one architecture of {', '.join(ARCHITECTURES)} in Architectures, "
            f"CompatibleArchitectures and BuildArchitecture; found {sorted(found) or 'none'}"
        )
    return found.pop()


def pip_platform_args(architecture: str = "arm64") -> list[str]:
    """Wheels for Lambda's CPython 3.13 on `architecture`, whatever machine builds."""
    args = [f"--platform={p}" for p in PLATFORMS[architecture]]
    return [*args, "--implementation=cp", f"--python-version={PYTHON_VERSION}", "--only-binary=:all:"]


def resolve(requirements: Path, architecture: str = "arm64") -> list[str]:
    """`name==version` of every distribution the requirements resolve to on Lambda, minus `LEFT_OUT`."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        options = ["--dry-run", "--ignore-installed", f"--report={report}", f"--target={scratch}/t"]
        subprocess.run(  # noqa: S603 - pip of this interpreter
            [*PIP, *options, *pip_platform_args(architecture), "-r", str(requirements)], check=True
        )
        installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    pins = [(i["metadata"]["name"], i["metadata"]["version"]) for i in installs]
    return sorted(f"{name}=={version}" for name, version in pins if _canonical(name) not in LEFT_OUT)


def install(target: Path, requirements: Path, architecture: str | None = None) -> list[str]:
    """Install the resolved pins into `target` (no bytecode) and check their native code; returns them.

    `architecture` None: the repository template's.
    """
    arch = architecture or template_architecture(DEFAULT_TEMPLATE)
    pins = resolve(requirements, arch)
    options = ["--no-deps", "--no-compile", "--upgrade", f"--target={target}", *pip_platform_args(arch)]
    subprocess.run([*PIP, *options, *pins], check=True)  # noqa: S603 - pip of this interpreter
    check_native_code(target, arch)
    return pins


def elf_architecture(path: Path) -> str | None:
    """The architecture an ELF file is built for (`arm64`, `x86_64`, or `e_machine=N`); None if not ELF."""
    with path.open("rb") as fh:
        header = fh.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    names = {number: name for name, number in ELF_MACHINES.items()}
    return names.get(machine, f"e_machine={machine}")


def foreign_native_code(target: Path, architecture: str) -> list[tuple[str, str]]:
    """`(relative path, architecture)` of every shared object in `target` not built for `architecture`."""
    foreign = []
    for path in sorted(target.rglob("*.so*")):
        if not path.is_file() or path.is_symlink():
            continue
        found = elf_architecture(path)
        if found is not None and found != architecture:
            foreign.append((str(path.relative_to(target)), found))
    return foreign


def check_native_code(target: Path, architecture: str) -> None:
    """Raise `ArchitectureError` naming the shared objects in `target` built for another architecture."""
    foreign = foreign_native_code(target, architecture)
    if foreign:
        listing = "; ".join(f"{name} ({arch})" for name, arch in foreign[:10])
        more = f" and {len(foreign) - 10} more" if len(foreign) > 10 else ""
        raise ArchitectureError(
            f"{len(foreign)} shared object(s) in {target} are not {architecture}: {listing}{more}"
        )


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def main(argv: Sequence[str] | None = None) -> int:
    """Install into TARGET (or only `--check` it); prints what was left out. Exit 1 on foreign native code."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("--requirements", type=Path, default=Path(__file__).with_name("requirements.txt"))
    parser.add_argument("--template", type=Path, default=DEFAULT_TEMPLATE, help="read the architecture here")
    parser.add_argument("--architecture", choices=ARCHITECTURES, help="instead of the template's")
    parser.add_argument("--check", action="store_true", help="only check TARGET's native code")
    args = parser.parse_args(argv)
    try:
        architecture = args.architecture or template_architecture(args.template)
        if args.check:
            check_native_code(args.target, architecture)
            print(f"{args.target}: every shared object is {architecture}")
            return 0
        print(f"installing for Lambda {architecture} (CPython {PYTHON_VERSION})")
        install(args.target, args.requirements, architecture)
    except ArchitectureError as error:
        print(f"install_layer.py: {error}", file=sys.stderr)
        return 1
    for name, why in LEFT_OUT.items():
        print(f"left out {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
