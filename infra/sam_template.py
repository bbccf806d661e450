"""template.yaml for another Lambda architecture: the same stack, built for x86_64 (or arm64).

    python -m infra.sam_template --architecture x86_64 --output build/x86_64/template.yaml

The deployed stack runs on arm64 (template.yaml). CI machines and most laptops are x86-64, and
the deployed tier (tests/deployed) runs the built functions natively under the Lambda runtime
emulator, so it builds this copy: every `Architectures`, `CompatibleArchitectures` and
`BuildArchitecture` rewritten, code paths made absolute (the copy lives elsewhere), nothing else
changed. Build it with `REARVIEW_TEMPLATE` set to the copy, so `functions/install_layer.py` reads
the architecture from the template SAM is building (`build_env`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from functions import install_layer

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

_LISTS = re.compile(r"^(\s*(?:Compatible)?Architectures:\s*)\[[^\]]*\]", re.MULTILINE)
_SINGLE = re.compile(r"^(\s*BuildArchitecture:\s*)[\w-]+", re.MULTILINE)
_CODE = re.compile(r"^(\s*(?:CodeUri|ContentUri):\s*)(\S+)", re.MULTILINE)


def for_architecture(text: str, architecture: str, base: Path = ROOT) -> str:
    """The template `text` built for `architecture`, with code paths absolute under `base`."""
    if architecture not in install_layer.ARCHITECTURES:
        raise ValueError(
            f"architecture must be one of {', '.join(install_layer.ARCHITECTURES)}, not {architecture!r}"
        )
    out, lists = _LISTS.subn(rf"\g<1>[{architecture}]", text)
    out, singles = _SINGLE.subn(rf"\g<1>{architecture}", out)
    out, codes = _CODE.subn(lambda m: f"{m.group(1)}{(base / m.group(2)).as_posix()}/", out)
    if not (lists and singles and codes):
        raise ValueError("the template names no Architectures, BuildArchitecture or CodeUri to rewrite")
    return out


def write(architecture: str, output: Path, template: Path = TEMPLATE) -> Path:
    """Write the `architecture` copy of `template` to `output`; checks it names only that architecture."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(for_architecture(template.read_text(encoding="utf-8"), architecture, template.parent))
    found = install_layer.template_architecture(output)
    if found != architecture:  # pragma: no cover - for_architecture rewrote every occurrence
        raise install_layer.ArchitectureError(f"{output} still names {found}")
    return output


def build_env(template: Path) -> dict[str, str]:
    """The environment `sam build --template-file template` needs so the layer matches the template."""
    return {**os.environ, "REARVIEW_TEMPLATE": str(template.resolve())}


def main(argv: Sequence[str] | None = None) -> int:
    """Write the copy; prints its path."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--architecture", required=True, choices=install_layer.ARCHITECTURES)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)
    print(write(args.architecture, args.output, args.template))
    return 0


if __name__ == "__main__":
    sys.exit(main())
