#!/usr/bin/env python3
"""Writes a BERT encoder ONNX model without torch: the same graph, node for node, that
scripts/export_models.py exports from its BertEncoder (query/key/value projections, scaled
dot-product attention, output projection, residual and LayerNormalization, an erf GELU
feed-forward), with random weights of a fixed seed.

    make_bert_base.py --out DIR            BERT-base: 12 layers, seq 384, hidden 768, 12 heads, ffn 3072
    make_bert_base.py --out DIR --layers 2 --seq 64 --hidden 128 --heads 4 --ffn 512

writes DIR/model.onnx (about 340 MB for BERT-base). Needs numpy and onnx.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers, seq, hidden, heads, ffn, seed=0):
    rng = np.random.default_rng(seed)
    head = hidden // heads
    nodes, inits = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, array):
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name + "_value")))
        return name

    def linear(prefix, x, n_in, n_out):
        w = weight(f"{prefix}.weight", (n_in, n_out), 1.0 / np.sqrt(n_in))
        b = weight(f"{prefix}.bias", (n_out,), 0.02)
        mm = f"/{prefix}/MatMul_output_0"
        nodes.append(helper.make_node("MatMul", [x, w], [mm]))
        out = f"/{prefix}/Add_output_0"
        nodes.append(helper.make_node("Add", [b, mm], [out]))
        return out

    x = "hidden_states"
    split = np.array([1, seq, heads, head], dtype=np.int64)
    for l in range(layers):
        p = f"layers.{l}"
        q = linear(f"{p}.query", x, hidden, hidden)
        k = linear(f"{p}.key", x, hidden, hidden)
        v = linear(f"{p}.value", x, hidden, hidden)
        names = {}
        for t, src in (("q", q), ("k", k), ("v", v)):
            shape = const(f"/{p}/split_{t}", split)
            names[t] = f"/{p}/{t}_heads"
            nodes.append(helper.make_node("Reshape", [src, shape], [names[t]]))
        qt, kt, vt = f"/{p}/q_t", f"/{p}/k_t", f"/{p}/v_t"
        nodes.append(helper.make_node("Transpose", [names["q"]], [qt], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Transpose", [names["k"]], [kt], perm=[0, 2, 3, 1]))
        nodes.append(helper.make_node("Transpose", [names["v"]], [vt], perm=[0, 2, 1, 3]))
        scores = f"/{p}/scores"
        nodes.append(helper.make_node("MatMul", [qt, kt], [scores]))
        scale = const(f"/{p}/scale", np.array(np.sqrt(head), dtype=np.float32))
        scaled = f"/{p}/scaled"
        nodes.append(helper.make_node("Div", [scores, scale], [scaled]))
        probs = f"/{p}/probs"
        nodes.append(helper.make_node("Softmax", [scaled], [probs], axis=-1))
        ctx = f"/{p}/context"
        nodes.append(helper.make_node("MatMul", [probs, vt], [ctx]))
        ctx_t = f"/{p}/context_t"
        nodes.append(helper.make_node("Transpose", [ctx], [ctx_t], perm=[0, 2, 1, 3]))
        merge = const(f"/{p}/merge", np.array([1, seq, hidden], dtype=np.int64))
        merged = f"/{p}/merged"
        nodes.append(helper.make_node("Reshape", [ctx_t, merge], [merged]))
        attn = linear(f"{p}.attn_out", merged, hidden, hidden)
        res1 = f"/{p}/residual1"
        nodes.append(helper.make_node("Add", [attn, x], [res1]))
        g1 = weight(f"{p}.attn_norm.weight", (hidden,), 0.1)
        b1 = weight(f"{p}.attn_norm.bias", (hidden,), 0.1)
        norm1 = f"/{p}/attn_norm"
        nodes.append(helper.make_node("LayerNormalization", [res1, g1, b1], [norm1], axis=-1, epsilon=1e-12))
        h = linear(f"{p}.ffn_in", norm1, hidden, ffn)
        sqrt2 = const(f"/{p}/sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
        one = const(f"/{p}/one", np.array(1.0, dtype=np.float32))
        half = const(f"/{p}/half", np.array(0.5, dtype=np.float32))
        d, e, a, m, g = (f"/{p}/gelu_{s}" for s in ("div", "erf", "add", "mul", "out"))
        nodes.append(helper.make_node("Div", [h, sqrt2], [d]))
        nodes.append(helper.make_node("Erf", [d], [e]))
        nodes.append(helper.make_node("Add", [e, one], [a]))
        nodes.append(helper.make_node("Mul", [h, a], [m]))
        nodes.append(helper.make_node("Mul", [m, half], [g]))
        o = linear(f"{p}.ffn_out", g, ffn, hidden)
        res2 = f"/{p}/residual2"
        nodes.append(helper.make_node("Add", [o, norm1], [res2]))
        g2 = weight(f"{p}.ffn_norm.weight", (hidden,), 0.1)
        b2 = weight(f"{p}.ffn_norm.bias", (hidden,), 0.1)
        out = "output" if l == layers - 1 else f"/{p}/ffn_norm"
        nodes.append(helper.make_node("LayerNormalization", [res2, g2, b2], [out], axis=-1, epsilon=1e-12))
        x = out
    graph = helper.make_graph(
        nodes,
        "bert_encoder",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_bert_base")
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for model.onnx")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=384)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ffn", type=int, default=3072)
    args = ap.parse_args()
    model = build(args.layers, args.seq, args.hidden, args.heads, args.ffn)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "model.onnx")
    onnx.save(model, path)
    print(path)


if __name__ == "__main__":
    main()
