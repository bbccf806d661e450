"""What the deployed tier needs on the host, installed from the package registries, then `sam build`.

    python -m tests.deployed.tooling     # install what is missing, build, print the paths and times

- CPython 3.13 (the Lambda runtime's version): `infra/python313.sh` (python3.13 on PATH, else
  Debian 13's, unpacked into the cache).
- The SAM CLI, pinned (`SAM_CLI_VERSION`), in a virtualenv of its own in the cache (its pins of
  boto3 and pydantic conflict with the project's). Its wheel carries the Lambda Runtime Interface
  Emulator (`samcli/local/rapid/aws-lambda-rie-<arch>`), which runs the functions here.
- The runtime's own packages (`/var/runtime` in Lambda): `awslambdaric` (the runtime interface
  client) and boto3 (the layer leaves it out: Lambda provides it), for CPython 3.13.
- The build: `infra/sam_template.py` writes template.yaml for this machine's architecture into
  `build/deployed/<arch>/`, then `sam build` (no container) builds it there. A stamp of the
  inputs' digest (template, functions/, requirements) skips a build that would be the same.

Cache: ${XDG_CACHE_HOME:-~/.cache}/rearview/. Set REARVIEW_SKIP_DEPLOYED=1 to skip the tier.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from functions import install_layer

from infra import sam_template

__all__ = ["Build", "Tools", "build", "ensure_tools", "host_architecture"]

ROOT = Path(__file__).resolve().parents[2]
SAM_CLI_VERSION = "1.170.0"
AWSLAMBDARIC_VERSION = "4.2.2"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rearview"
PIP_QUIET = ["--quiet", "--disable-pip-version-check"]


@dataclass(frozen=True)
class Tools:
    python313: Path
    sam: Path
    emulator: Path
    runtime_dir: Path


@dataclass(frozen=True)
class Build:
    architecture: str
    template: Path  # the built template (sam build's output)
    artifacts: Path
    seconds: float  # 0 when the stamp matched

    def code_dir(self, logical_id: str) -> Path:
        return self.artifacts / logical_id

    @property
    def layer_dir(self) -> Path:
        return self.artifacts / "DependenciesLayer"


def host_architecture() -> str:
    """This machine's Lambda architecture name."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "x86_64"
    if machine in ("aarch64", "arm64"):
        return "arm64"
    raise RuntimeError(f"Lambda runs on x86_64 or arm64; this machine is {machine}")


def _log(message: str) -> None:
    print(f"deployed tier: {message}", file=sys.stderr, flush=True)


def ensure_python313() -> Path:
    out = subprocess.run(
        ["bash", str(ROOT / "infra" / "python313.sh")], check=True, stdout=subprocess.PIPE, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def ensure_sam_cli() -> Path:
    """The SAM CLI's virtualenv (created on first use); returns its `sam`."""
    venv = CACHE / f"sam-cli-{SAM_CLI_VERSION}"
    sam = venv / "bin" / "sam"
    if (venv / ".complete").exists() and sam.exists():
        return sam
    _log(f"installing the SAM CLI {SAM_CLI_VERSION} into {venv} (about a minute)")
    shutil.rmtree(venv, ignore_errors=True)
    base = Path(getattr(sys, "_base_executable", sys.executable))
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET]
    subprocess.run([*pip, f"aws-sam-cli=={SAM_CLI_VERSION}"], check=True)
    (venv / ".complete").touch()
    return sam


def emulator_of(sam: Path, architecture: str) -> Path:
    """The runtime interface emulator binary inside the SAM CLI's wheel."""
    found = sorted(
        sam.parent.parent.glob(f"lib/python3*/site-packages/samcli/local/rapid/aws-lambda-rie-{architecture}")
    )
    if not found:
        raise RuntimeError(f"no aws-lambda-rie-{architecture} in the SAM CLI at {sam.parent.parent}")
    emulator = found[0]
    emulator.chmod(emulator.stat().st_mode | 0o111)
    return emulator


def ensure_runtime_dir(python313: Path) -> Path:
    """Lambda's `/var/runtime` for this tier: awslambdaric and boto3 (the project's pinned version)."""
    boto3 = metadata.version("boto3")
    runtime = CACHE / f"lambda-runtime-py313-ric{AWSLAMBDARIC_VERSION}-boto3-{boto3}"
    if (runtime / ".complete").exists():
        return runtime
    _log(f"installing awslambdaric {AWSLAMBDARIC_VERSION} and boto3 {boto3} for CPython 3.13 into {runtime}")
    shutil.rmtree(runtime, ignore_errors=True)
    subprocess.run(
        [
            str(python313),
            "-m",
            "pip",
            "install",
            *PIP_QUIET,
            "--target",
            str(runtime),
            f"awslambdaric=={AWSLAMBDARIC_VERSION}",
            f"boto3=={boto3}",
        ],
        check=True,
    )
    (runtime / ".complete").touch()
    return runtime


def ensure_tools(architecture: str | None = None) -> Tools:
    python313 = ensure_python313()
    sam = ensure_sam_cli()
    return Tools(
        python313, sam, emulator_of(sam, architecture or host_architecture()), ensure_runtime_dir(python313)
    )


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    paths = [ROOT / "template.yaml", *sorted((ROOT / "functions").rglob("*"))]
    for path in paths:
        if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".egg-info"):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    digest.update(SAM_CLI_VERSION.encode())
    return digest.hexdigest()


def build(tools: Tools, architecture: str | None = None) -> Build:
    """`sam build` of template.yaml for `architecture` (default: this machine's), unless already built."""
    arch = architecture or host_architecture()
    where = ROOT / "build" / "deployed" / arch
    artifacts = where / "artifacts"
    stamp = where / ".stamp"
    want = _inputs_digest()
    if stamp.exists() and stamp.read_text() == want and (artifacts / "template.yaml").exists():
        return Build(arch, artifacts / "template.yaml", artifacts, 0.0)
    _log(f"sam build for {arch} into {artifacts}")
    started = time.monotonic()
    template = sam_template.write(arch, where / "template.yaml")
    shutil.rmtree(artifacts, ignore_errors=True)
    env = {**sam_template.build_env(template), "PYTHON": str(tools.python313), "SAM_CLI_TELEMETRY": "0"}
    env["PATH"] = os.pathsep.join([str(tools.sam.parent), env.get("PATH", "")])
    result = subprocess.run(
        [str(tools.sam), "build", "--template-file", str(template), "--build-dir", str(artifacts)],
        check=False,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"sam build failed ({result.returncode}):\n{result.stdout[-6000:]}")
    install_layer.check_native_code(artifacts / "DependenciesLayer" / "python", arch)
    stamp.write_text(want)
    return Build(arch, artifacts / "template.yaml", artifacts, time.monotonic() - started)


def main() -> int:
    """Install what is missing and build (`make deployed-tools`); prints the paths and times."""
    if os.environ.get("REARVIEW_SKIP_DEPLOYED") == "1":
        _log("REARVIEW_SKIP_DEPLOYED=1: nothing installed or built (the tier is skipped)")
        return 0
    started = time.monotonic()
    tools = ensure_tools()
    tools_s = time.monotonic() - started
    built = build(tools)
    print(f"python3.13: {tools.python313}\nsam: {tools.sam}\nemulator: {tools.emulator}")
    print(f"runtime: {tools.runtime_dir}\nbuilt: {built.template}")
    print(
        f"tools ready in {tools_s:.1f} s; sam build {built.seconds:.1f} s (0: unchanged since the last build)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
