"""infra/bundle_size.py's verdicts on a fake layer directory (the real build needs PyPI: `make bundle-size`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from functions import install_layer

from infra import bundle_size, sam_template


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
        "  for out; do :; done\n"  # the last argument: the layer's directory
        '  mkdir -p "$out/pkg" && printf "VALUE = 1\\n" > "$out/pkg/__init__.py"; exit 0\n'
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


def elf(machine: int) -> bytes:
    """The first bytes of a little-endian 64-bit ELF shared object for `machine` (e_machine)."""
    return b"\x7fELF\x02\x01\x01" + b"\0" * 9 + (3).to_bytes(2, "little") + machine.to_bytes(2, "little")


def test_the_layer_is_built_for_the_architecture_asked_for() -> None:
    assert "--platform=manylinux2014_aarch64" in install_layer.pip_platform_args("arm64")
    x86 = install_layer.pip_platform_args("x86_64")
    assert "--platform=manylinux2014_x86_64" in x86 and not any("aarch64" in a for a in x86)


def test_native_code_for_another_architecture_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layer = fake_layer(
        tmp_path,
        {
            "charset_normalizer/md.cpython-313-aarch64-linux-gnu.so": elf(183),
            "numpy.libs/libopenblas.so.0": elf(62),
            "notes.sources": "not an ELF file",
        },
    )
    assert install_layer.foreign_native_code(layer, "x86_64") == [
        ("charset_normalizer/md.cpython-313-aarch64-linux-gnu.so", "arm64")
    ]
    with pytest.raises(install_layer.ArchitectureError, match="1 shared object"):
        install_layer.check_native_code(layer, "x86_64")
    assert install_layer.main([str(layer), "--check", "--architecture", "x86_64"]) == 1
    assert "charset_normalizer/md.cpython-313-aarch64-linux-gnu.so (arm64)" in capsys.readouterr().err
    (layer / "charset_normalizer/md.cpython-313-aarch64-linux-gnu.so").unlink()
    assert install_layer.main([str(layer), "--check", "--architecture", "x86_64"]) == 0


def test_the_architecture_comes_from_the_template(tmp_path: Path) -> None:
    assert install_layer.template_architecture(install_layer.DEFAULT_TEMPLATE) == "arm64"
    copy = sam_template.write("x86_64", tmp_path / "template.yaml")
    assert install_layer.template_architecture(copy) == "x86_64"
    text = copy.read_text(encoding="utf-8")
    assert f"CodeUri: {(install_layer.DEFAULT_TEMPLATE.parent / 'functions').as_posix()}/" in text
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(text.replace("BuildArchitecture: x86_64", "BuildArchitecture: arm64"), encoding="utf-8")
    with pytest.raises(install_layer.ArchitectureError, match=r"found \['arm64', 'x86_64'\]"):
        install_layer.template_architecture(mixed)
    with pytest.raises(ValueError, match="architecture must be one of"):
        sam_template.for_architecture(text, "s390x")
