"""template.yaml through the linters: cfn-lint, and `sam validate --lint` where the SAM CLI is installed.

Integration tier: both load the whole CloudFormation resource specification (seconds each).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"

pytestmark = pytest.mark.slow


def test_cfn_lint_passes() -> None:
    from cfnlint.api import ManualArgs, lint_file

    matches = lint_file(TEMPLATE, config=ManualArgs(include_checks=["I"], regions=["us-east-1", "eu-west-1"]))
    assert [str(m) for m in matches] == []


def test_sam_validate_lint_passes() -> None:
    sam = shutil.which("sam")
    if sam is None:
        pytest.skip("the SAM CLI is not installed (pipx install aws-sam-cli)")
    result = subprocess.run(
        [sam, "validate", "--lint", "--region", "us-east-1", "--template-file", str(TEMPLATE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={"SAM_CLI_TELEMETRY": "0", "PATH": str(Path(sam).parent) + ":/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
