"""infra/bundle_size.py's verdicts on a fake layer directory (the real build needs PyPI: `make bundle-size`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from functions import install_layer

from infra import bundle_size


def fake_layer(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def test_sizes_group_by_import_name(tmp_path: Path) -> None:
    layer = fake_layer(
        tmp_path,
        {
            "numpy/core.so": b"x" * 300,
            "numpy.libs/blas.so": b"x" * 200,
            "six.py": "x",
            "six-1.dist-info/RECORD": "ab",
        },
    )
    assert bundle_size.sizes(layer) == {"numpy": 500, "six": 1, "*.dist-info (metadata)": 2}


def test_native_code_nothing_imports_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layer = fake_layer(
        tmp_path,
        {
            "grpc/_cython/cygrpc.so": b"\0",  # only a left-out package would import it
            "_cffi_backend.so": b"\0",
            "cffi/api.py": "import _cffi_backend\n",
            "numpy/_core/multiarray.so": b"\0",  # our code imports numpy
        },
    )
    assert bundle_size.unimported_native(layer) == ["grpc"]
    assert bundle_size.report(layer, budget_mb=100) == 1
    assert "native packages nothing imports: grpc" in capsys.readouterr().err


def test_over_budget_fails(tmp_path: Path) -> None:
    layer = fake_layer(tmp_path, {"numpy/big.bin": b"x" * 2_000_000})
    assert bundle_size.report(layer, budget_mb=1) == 1
    assert bundle_size.report(layer, budget_mb=3) == 0


def test_the_layer_leaves_out_grpc_and_what_the_runtime_provides() -> None:
    assert {"grpcio", "protobuf", "opensearch-protobufs", "boto3", "botocore"} <= set(install_layer.LEFT_OUT)
    args = install_layer.pip_platform_args()
    assert "--python-version=3.13" in args and "--only-binary=:all:" in args


def test_the_measured_layer_is_the_one_sam_build_makes_bytecode_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """functions/Makefile's target runs (its install step faked, its compile step real) and its .pyc count."""
    import sys

    fake = tmp_path / "python3.13"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = install_layer.py ]; then\n'
        '  mkdir -p "$2/pkg" && printf "VALUE = 1\\n" > "$2/pkg/__init__.py"; exit 0\n'
        "fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    layer = bundle_size.build(tmp_path / "artifacts", str(fake))
    assert layer == tmp_path / "artifacts" / "python"
    assert bundle_size.bytecode_bytes(layer) > 0  # the Makefile compiled it, as it does for Lambda
    assert bundle_size.report(layer, budget_mb=1) == 0
    out = capsys.readouterr().out
    total = sum(p.stat().st_size for p in layer.rglob("*") if p.is_file())
    assert f"{total / bundle_size.MB:8.1f} MB  total" in out and "of it bytecode (.pyc)" in out


def test_a_built_layer_is_measured_where_sam_put_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_layer(
        tmp_path / "python", {"numpy/__pycache__/x.cpython-313.pyc": b"x" * 2_000_000, "numpy/x.py": "x"}
    )
    assert bundle_size.main(["--built", str(tmp_path), "--budget-mb", "1"]) == 1
    assert "2.0 MB  of it bytecode" in capsys.readouterr().out


def test_the_budget_leaves_half_of_lambdas_limit() -> None:
    assert bundle_size.BUDGET_MB <= 250 / 2
