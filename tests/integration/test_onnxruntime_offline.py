"""onnxruntime writes no telemetry (device id, event store) when Rearview loads it (issue 34.6)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from onnx import TensorProto, helper
    {load}
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.run(None, {{"x": np.ones(1, np.float32)}})[0][0] == 1.0
    """
)


def _run(load: str, cache: Path) -> list[Path]:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT / "functions"))
    subprocess.run([sys.executable, "-c", SCRIPT.format(load=load)], env=env, check=True, timeout=120)
    return sorted(p for p in cache.rglob("*") if p.is_file())


def test_rearview_loads_onnxruntime_with_nothing_written_to_the_users_cache(tmp_path: Path) -> None:
    load = "from rearview.embedders.onnxruntime_import import onnxruntime\nort = onnxruntime()"
    assert _run(load, tmp_path / "rearview") == []


def test_the_check_sees_what_a_plain_import_writes(tmp_path: Path) -> None:
    """The control: without the switch, this onnxruntime build writes its device id there."""
    written = _run("import onnxruntime as ort", tmp_path / "plain")
    if not written:
        pytest.skip("this onnxruntime build keeps no telemetry: the check above proves nothing here")
    assert any(p.name == "deviceid" for p in written), written
