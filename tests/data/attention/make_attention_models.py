#!/usr/bin/env python3
"""Writes the small attention models of tests/data/attention, each with one data set whose
reference outputs ONNX Runtime computes (backend-test layout):

  vit            a ViT encoder block's attention: 17 tokens (class token + 16 patches), 4 heads
                 of 16, Q/K/V projections, scores scaled by a Mul, output projection + residual
  swin_window    Swin window attention: 4 windows of 3x3 tokens as the batch, 2 heads of 16,
                 a relative position bias [heads, 9, 9] and a shifted-window mask [windows, 1, 9, 9]
                 (0 / -100) added to the scores
  gpt_causal     a causal GPT block's attention: 24 tokens, 4 heads of 16, the scores masked by
                 Where(causal, scores, -inf)
  gpt_causal_add the same with an additive mask (-1e9 above the diagonal)
  vit_fp16, gpt_causal_fp16   the vit and gpt_causal models in float16

Run with a Python that has numpy, onnx and onnxruntime:
  python3 tests/data/attention/make_attention_models.py
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))


def build(name, tokens, width, heads, batch=1, mask=None, bias=None, dtype=np.float32, scale_op="Div"):
    rng = np.random.default_rng(len(name) * 7 + tokens)
    elem = T.FLOAT if dtype == np.float32 else T.FLOAT16
    hd = width // heads
    inits, nodes = [], []

    def const(n, a):
        inits.append(nh.from_array(np.asarray(a), n))
        return n

    x = "x"
    for p in "qkv":
        const(f"W{p}", (rng.standard_normal((width, width)) / np.sqrt(width)).astype(dtype))
        const(f"b{p}", (rng.standard_normal(width) * 0.1).astype(dtype))
        nodes.append(h.make_node("MatMul", [x, f"W{p}"], [f"{p}_mm"], name=f"{p}_proj"))
        nodes.append(h.make_node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_b"], name=f"{p}_bias"))
        const(f"shape_{p}", np.array([batch, tokens, heads, hd], np.int64))
        nodes.append(h.make_node("Reshape", [f"{p}_b", f"shape_{p}"], [f"{p}_r"], name=f"{p}_heads"))
        perm = [0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]
        nodes.append(h.make_node("Transpose", [f"{p}_r"], [f"{p}_t"], perm=perm, name=f"{p}_perm"))
    nodes.append(h.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="QK"))
    if scale_op == "Div":
        const("scale", np.array(np.sqrt(hd), dtype))
    else:
        const("scale", np.array(1.0 / np.sqrt(hd), dtype))
    nodes.append(h.make_node(scale_op, ["scores", "scale"], ["scaled"], name="scale"))
    s = "scaled"
    if bias is not None:
        const("rel_bias", bias.astype(dtype))
        nodes.append(h.make_node("Add", [s, "rel_bias"], ["biased"], name="rel_bias_add"))
        s = "biased"
    if mask is not None:
        kind, m = mask
        if kind == "where":
            const("causal", m)
            const("neg_inf", np.array(-np.inf, dtype))
            nodes.append(h.make_node("Where", ["causal", s, "neg_inf"], ["masked"], name="mask"))
        else:
            const("mask_add", m.astype(dtype))
            nodes.append(h.make_node("Add", [s, "mask_add"], ["masked"], name="mask"))
        s = "masked"
    nodes.append(h.make_node("Softmax", [s], ["probs"], axis=-1, name="softmax"))
    nodes.append(h.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="AV"))
    nodes.append(h.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="ctx_perm"))
    const("shape_o", np.array([batch, tokens, width], np.int64))
    nodes.append(h.make_node("Reshape", ["ctx_t", "shape_o"], ["ctx_r"], name="ctx_merge"))
    const("Wo", (rng.standard_normal((width, width)) / np.sqrt(width)).astype(dtype))
    nodes.append(h.make_node("MatMul", ["ctx_r", "Wo"], ["o_mm"], name="o_proj"))
    nodes.append(h.make_node("Add", ["o_mm", x], ["y"], name="residual"))
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(x, elem, [batch, tokens, width])],
                     [h.make_tensor_value_info("y", elem, [batch, tokens, width])], inits)
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "test_data_set_0"))
    onnx.save(model, os.path.join(folder, "model.onnx"))
    xin = rng.standard_normal((batch, tokens, width)).astype(dtype)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {x: xin})
    assert np.all(np.isfinite(y)), name
    ds = os.path.join(folder, "test_data_set_0")
    onnx.save_tensor(nh.from_array(xin, x), os.path.join(ds, "input_0.pb"))
    onnx.save_tensor(nh.from_array(y, "y"), os.path.join(ds, "output_0.pb"))


def causal(n):
    return np.tril(np.ones((n, n), dtype=bool))


def main():
    build("vit", 17, 64, 4, scale_op="Mul")
    build("vit_fp16", 17, 64, 4, scale_op="Mul", dtype=np.float16)
    rng = np.random.default_rng(5)
    bias = rng.standard_normal((2, 9, 9)).astype(np.float32)
    shift = np.zeros((4, 1, 9, 9), np.float32)
    for w in range(1, 4):  # the shifted windows: tokens of different regions do not attend
        region = (np.arange(9) % (w + 1)) == 0
        shift[w, 0] = np.where(region[:, None] == region[None, :], 0.0, -100.0)
    build("swin_window", 9, 32, 2, batch=4, bias=bias, mask=("add", shift))
    build("gpt_causal", 24, 64, 4, mask=("where", causal(24)))
    build("gpt_causal_fp16", 24, 64, 4, mask=("where", causal(24)), dtype=np.float16)
    build("gpt_causal_add", 24, 64, 4, mask=("add", np.where(causal(24), 0.0, -1e9)))


if __name__ == "__main__":
    main()
