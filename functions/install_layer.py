"""Install the functions' dependencies for Lambda (arm64, CPython 3.13) into a directory, with exceptions.

    python3.13 install_layer.py TARGET [--requirements requirements.txt]

Two pip steps: resolve `requirements.txt` for the Lambda platform (`pip install --dry-run
--report`), then install exactly the resolved versions with `--no-deps`, leaving out `LEFT_OUT`.
pip cannot drop a dependency of a dependency any other way. Standard library only: SAM runs this
from its scratch copy of `functions/` (`make build-DependenciesLayer`), and `infra/bundle_size.py`
runs it to measure the layer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
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


def pip_platform_args() -> list[str]:
    """Wheels for Lambda's arm64 CPython 3.13, whatever machine builds."""
    args = [f"--platform={p}" for p in PLATFORMS]
    return [*args, "--implementation=cp", f"--python-version={PYTHON_VERSION}", "--only-binary=:all:"]


def resolve(requirements: Path) -> list[str]:
    """`name==version` of every distribution the requirements resolve to on Lambda, minus `LEFT_OUT`."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        options = ["--dry-run", "--ignore-installed", f"--report={report}", f"--target={scratch}/t"]
        subprocess.run(  # noqa: S603 - pip of this interpreter
            [*PIP, *options, *pip_platform_args(), "-r", str(requirements)], check=True
        )
        installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    pins = [(i["metadata"]["name"], i["metadata"]["version"]) for i in installs]
    return sorted(f"{name}=={version}" for name, version in pins if _canonical(name) not in LEFT_OUT)


def install(target: Path, requirements: Path) -> list[str]:
    """Install the resolved pins into `target` (no bytecode); returns them."""
    pins = resolve(requirements)
    options = ["--no-deps", "--no-compile", "--upgrade", f"--target={target}", *pip_platform_args()]
    subprocess.run([*PIP, *options, *pins], check=True)  # noqa: S603 - pip of this interpreter
    return pins


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def main(argv: Sequence[str] | None = None) -> int:
    """Install into TARGET; prints what was left out and why."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("--requirements", type=Path, default=Path(__file__).with_name("requirements.txt"))
    args = parser.parse_args(argv)
    install(args.target, args.requirements)
    for name, why in LEFT_OUT.items():
        print(f"left out {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
