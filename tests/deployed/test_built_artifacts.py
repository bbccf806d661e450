"""What `sam build` produced: the architecture the template asked for, and only our code per function."""

from __future__ import annotations

import pytest
from functions import install_layer

from tests.deployed.conftest import Deployment
from tests.deployed.stack import load

pytestmark = [pytest.mark.deployed, pytest.mark.opensearch, pytest.mark.slow]


def test_the_layer_holds_native_code_for_the_built_architecture_only(deployment: Deployment) -> None:
    built = deployment.build
    layer = built.layer_dir / "python"
    assert install_layer.template_architecture(built.template) == built.architecture
    assert sorted(layer.rglob("*.so")), "a layer with no native code would not exercise the check"
    install_layer.check_native_code(layer, built.architecture)  # raises on a foreign .so
    other = next(a for a in install_layer.ARCHITECTURES if a != built.architecture)
    with pytest.raises(install_layer.ArchitectureError, match=f"are not {other}"):
        install_layer.check_native_code(layer, other)
    for left_out in ("boto3", "botocore", "grpc"):
        assert not (layer / left_out).exists(), left_out


def test_each_function_ships_our_code_precompiled(deployment: Deployment) -> None:
    resources = load(deployment.build.template)["Resources"]
    for logical_id in ("McpFunction", "JobsFunction", "StreamFunction"):
        code = deployment.build.code_dir(logical_id)
        assert sorted(p.name for p in code.iterdir()) == ["handlers", "rearview"]
        module = resources[logical_id]["Properties"]["Handler"].rsplit(".", 1)[0].replace(".", "/")
        assert (code / f"{module}.py").exists()
        assert list((code / "handlers" / "__pycache__").glob("*.cpython-313.pyc"))
