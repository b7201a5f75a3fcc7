#!/usr/bin/env python3
"""Writes the small com.microsoft contrib-op models of tests/data/contrib, each with one data set
whose reference outputs ONNX Runtime computes (backend-test layout), and the model ONNX Runtime's
graph optimizer saves for a tiny BERT-like block (ort_optimized_bert). Run with a Python that has
numpy, onnx, onnxruntime and sympy:  VENV/bin/python tests/data/contrib/make_contrib_models.py
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(32)
MS = "com.microsoft"


def f32(shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def init(name, array):
    return nh.from_array(np.asarray(array), name)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def model(name, nodes, inputs, outputs, inits, opset=17):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset), h.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def save_case(name, m, feeds, run_model=None, threads=0):
    """Writes NAME/model.onnx (m) and its test_data_set_0, the outputs ONNX Runtime's for
    run_model (m itself when None), on `threads` threads (0: its default)."""
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    ref = (run_model or m).SerializeToString()
    sess = ort.InferenceSession(ref, so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    data = os.path.join(d, "test_data_set_0")
    for k, (key, v) in enumerate(feeds.items()):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, key).SerializeToString())
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, o.name).SerializeToString())
    return outs


def fused_matmul():
    """FusedMatMul: alpha, transA/transB, and the batch transposes transBatchA/transBatchB."""
    nodes = [
        h.make_node("FusedMatMul", ["a", "b"], ["y_plain"], domain=MS, alpha=0.5),
        h.make_node("FusedMatMul", ["at", "b"], ["y_ta"], domain=MS, transA=1),
        h.make_node("FusedMatMul", ["a", "bt"], ["y_tb"], domain=MS, transB=1, alpha=-1.25),
        h.make_node("FusedMatMul", ["abatch", "b"], ["y_tba"], domain=MS, transBatchA=1),
        h.make_node("FusedMatMul", ["abatch_t", "b"], ["y_tba_ta"], domain=MS, transBatchA=1,
                    transA=1),
        h.make_node("FusedMatMul", ["a", "bbatch"], ["y_tbb"], domain=MS, transBatchB=1),
        h.make_node("FusedMatMul", ["a", "bbatch_t"], ["y_tbb_tb"], domain=MS, transBatchB=1,
                    transB=1, alpha=2.0),
        h.make_node("FusedMatMul", ["a", "w"], ["y_w"], domain=MS, alpha=0.125),
    ]
    feeds = {
        "a": f32((2, 3, 4, 5)), "at": f32((2, 3, 5, 4)), "b": f32((2, 3, 5, 6)),
        "bt": f32((2, 3, 6, 5)), "abatch": f32((4, 2, 3, 5)), "abatch_t": f32((5, 2, 3, 4)),
        "bbatch": f32((5, 2, 3, 6)), "bbatch_t": f32((6, 2, 3, 5)),
    }
    outs = ["y_plain", "y_ta", "y_tb", "y_tba", "y_tba_ta", "y_tbb", "y_tbb_tb", "y_w"]
    m = model("fused_matmul", nodes, [vi(k, T.FLOAT, v.shape) for k, v in feeds.items()],
              [vi(o, T.FLOAT, [2, 3, 4, 6]) for o in outs], [init("w", f32((5, 6)))])
    save_case("fused_matmul", m, feeds)


def integer_matmuls():
    """MatMulIntegerToFloat (uint8 A, int8 B per column, bias) and DynamicQuantizeMatMul (float A
    quantized on the fly; per-tensor and per-column B scales, bias), as ONNX Runtime's optimizer
    fuses them from a dynamically quantized MatMul."""
    nodes = [
        h.make_node("MatMulIntegerToFloat", ["qa", "w", "sa", "sw_col", "za", "zw_col", "bias"],
                    ["y_int_to_float"], domain=MS),
        h.make_node("MatMulIntegerToFloat", ["qa", "w", "sa", "sw"], ["y_int_to_float_plain"],
                    domain=MS),
        h.make_node("DynamicQuantizeMatMul", ["x", "w", "sw", "zw", "bias"], ["y_dynamic"],
                    domain=MS),
        h.make_node("DynamicQuantizeMatMul", ["x", "w", "sw_col", "zw_col"],
                    ["y_dynamic_col"], domain=MS),
    ]
    feeds = {"qa": rng.integers(0, 256, (2, 3, 8), dtype=np.uint8), "x": f32((2, 3, 8))}
    elem = {np.dtype(np.float32): T.FLOAT, np.dtype(np.uint8): T.UINT8}
    m = model("integer_matmuls", nodes, [vi(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
              [vi(n.output[0], T.FLOAT, (2, 3, 5)) for n in nodes],
              [init("w", rng.integers(-127, 128, (8, 5), dtype=np.int8)),
               init("sa", np.array(0.02, np.float32)), init("za", np.array(120, np.uint8)),
               init("sw", np.array(0.01, np.float32)), init("zw", np.array(0, np.int8)),
               init("sw_col", (rng.random(5) * 0.02 + 0.005).astype(np.float32)),
               init("zw_col", rng.integers(-3, 4, (5,), dtype=np.int8)),
               init("bias", f32((5,), 0.1))])
    save_case("integer_matmuls", m, feeds)


def fused_conv():
    """FusedConv as ONNX Runtime's optimizer writes it for Conv + activation: each activation it
    fuses, with its parameters, a bias, strides and pads, and the Z input (Conv + Add + Relu)."""
    nodes = [h.make_node("FusedConv", ["x", "w", "b"], [f"y_{a.lower()}"], domain=MS,
                         activation=a, pads=[1, 1, 1, 1], **({"activation_params": p} if p else {}))
             for a, p in [("Relu", None), ("Tanh", None), ("Sigmoid", None),
                          ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.75]),
                          ("HardSigmoid", [0.25, 0.4])]]
    nodes.append(h.make_node("FusedConv", ["x", "w", "", "z"], ["y_sum_relu"], domain=MS,
                             activation="Relu", strides=[2, 2], pads=[1, 1, 1, 1]))
    outs = [n.output[0] for n in nodes]
    feeds = {"x": f32((1, 3, 6, 6)), "z": f32((1, 4, 3, 3))}
    m = model("fused_conv", nodes, [vi(k, T.FLOAT, v.shape) for k, v in feeds.items()],
              [vi(o, T.FLOAT, (1, 4, 3, 3) if o == "y_sum_relu" else (1, 4, 6, 6))
               for o in outs],
              [init("w", f32((4, 3, 3, 3), 0.3)), init("b", f32((4,), 0.1))])
    save_case("fused_conv", m, feeds)


def embed_layer_norm():
    """EmbedLayerNormalization as ONNX Runtime's transformer optimizer writes it for BERT's
    embeddings: word, position and segment tables, a mask (its row sums as mask_index), the
    embedding sum; and the plain form without segments or mask (mask_index all 0)."""
    b, s, hid = 2, 4, 8
    nodes = [
        h.make_node("EmbedLayerNormalization",
                    ["ids", "seg", "word", "pos", "seg_table", "gamma", "beta", "mask"],
                    ["y", "mask_index", "embedding_sum"], domain=MS, epsilon=1e-5),
        h.make_node("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta"],
                    ["y_plain", "mask_index_plain"], domain=MS),
    ]
    feeds = {"ids": rng.integers(0, 10, (b, s)).astype(np.int32),
             "seg": rng.integers(0, 2, (b, s)).astype(np.int32),
             "mask": np.array([[1, 1, 1, 0], [1, 0, 1, 1]], np.int32)}
    m = model("embed_layer_norm", nodes, [vi(k, T.INT32, v.shape) for k, v in feeds.items()],
              [vi("y", T.FLOAT, (b, s, hid)), vi("mask_index", T.INT32, (b,)),
               vi("embedding_sum", T.FLOAT, (b, s, hid)), vi("y_plain", T.FLOAT, (b, s, hid)),
               vi("mask_index_plain", T.INT32, (b,))],
              [init("word", f32((10, hid))), init("pos", f32((s, hid))),
               init("seg_table", f32((2, hid))), init("gamma", f32((hid,), 0.5) + 1),
               init("beta", f32((hid,), 0.1))])
    save_case("embed_layer_norm", m, feeds)


def gelu_family():
    """Gelu, FastGelu (with and without bias), BiasGelu and QuickGelu (default and given alpha)."""
    shape = (2, 3, 16)
    nodes = [
        h.make_node("Gelu", ["x"], ["gelu"], domain=MS),
        h.make_node("FastGelu", ["x"], ["fast"], domain=MS),
        h.make_node("FastGelu", ["x", "bias"], ["fast_bias"], domain=MS),
        h.make_node("BiasGelu", ["x", "bias"], ["bias_gelu"], domain=MS),
        h.make_node("QuickGelu", ["x"], ["quick"], domain=MS),
        h.make_node("QuickGelu", ["x"], ["quick_alpha"], domain=MS, alpha=1.5),
    ]
    outs = ["gelu", "fast", "fast_bias", "bias_gelu", "quick", "quick_alpha"]
    m = model("gelu_family", nodes, [vi("x", T.FLOAT, shape)],
              [vi(o, T.FLOAT, shape) for o in outs], [init("bias", f32((16,), 0.5))])
    save_case("gelu_family", m, {"x": f32(shape, 2.0)})


def layer_norms():
    """SkipLayerNormalization (bias and beta, every output; a 2-D skip), the ONNX-domain
    SimplifiedLayerNormalization ONNX Runtime registers (RMS norm), and
    SkipSimplifiedLayerNormalization."""
    shape = (2, 3, 16)
    nodes = [
        h.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                    ["sln", "sln_mean", "sln_inv_std", "sln_sum"], domain=MS, epsilon=1e-5),
        h.make_node("SkipLayerNormalization", ["x", "skip2d", "gamma"], ["sln_plain"], domain=MS,
                    epsilon=1e-3),
        h.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["rms", "rms_inv_std"],
                    epsilon=1e-6, axis=-1),
        h.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
                    ["ssln", "", "ssln_inv_std", "ssln_sum"], domain=MS, epsilon=1e-5),
    ]
    outs = [("sln", shape), ("sln_mean", (2, 3, 1)), ("sln_inv_std", (2, 3, 1)),
            ("sln_sum", shape), ("sln_plain", shape), ("rms", shape),
            ("rms_inv_std", (2, 3, 1)), ("ssln", shape), ("ssln_inv_std", (2, 3, 1)),
            ("ssln_sum", shape)]
    feeds = {"x": f32(shape, 2.0), "skip": f32(shape), "skip2d": f32((3, 16))}
    m = model("layer_norms", nodes, [vi(k, T.FLOAT, v.shape) for k, v in feeds.items()],
              [vi(o, T.FLOAT, s) for o, s in outs],
              [init("gamma", f32((16,), 0.5) + 1), init("beta", f32((16,), 0.1)),
               init("bias", f32((16,), 0.2))])
    save_case("layer_norms", m, feeds)


def attention():
    """Attention (fused QKV weights): a 2-D key mask, an end-position mask, causal with a given
    scale, an additive attention bias, unequal qkv_hidden_sizes; MultiHeadAttention with
    separate Q/K/V, a bias, a key padding mask and the present key/value outputs, and causal."""
    b, s, d, n, l = 2, 5, 8, 2, 4
    nodes = [
        h.make_node("Attention", ["x", "w", "bqkv", "mask2d"], ["att_mask2d"], domain=MS,
                    num_heads=n),
        h.make_node("Attention", ["x", "w", "bqkv", "mask_end"], ["att_mask_end"], domain=MS,
                    num_heads=n),
        h.make_node("Attention", ["x", "w", "bqkv"], ["att_causal"], domain=MS, num_heads=n,
                    unidirectional=1, scale=0.3),
        h.make_node("Attention", ["x", "w", "bqkv", "", "", "att_bias"], ["att_bias_out"],
                    domain=MS, num_heads=n),
        h.make_node("Attention", ["x", "w_sizes"], ["att_sizes"], domain=MS, num_heads=n,
                    qkv_hidden_sizes=[8, 8, 4]),
        h.make_node("MultiHeadAttention", ["q", "k", "v", "bmha", "kpm"],
                    ["mha", "mha_present_k", "mha_present_v"], domain=MS, num_heads=n),
        h.make_node("MultiHeadAttention", ["q", "k", "v"], ["mha_causal"], domain=MS,
                    num_heads=n, unidirectional=1),
    ]
    mask2d = np.ones((b, s), np.int32)
    mask2d[0, 3:] = 0
    mask2d[1, 1] = 0
    kpm = np.ones((b, l), np.int32)
    kpm[1, 2:] = 0
    feeds = {"x": f32((b, s, d)), "mask2d": mask2d, "mask_end": np.array([3, 5], np.int32),
             "q": f32((b, s, d)), "k": f32((b, l, d)), "v": f32((b, l, d)), "kpm": kpm}
    elem = {np.dtype(np.float32): T.FLOAT, np.dtype(np.int32): T.INT32}
    outs = [("att_mask2d", (b, s, d)), ("att_mask_end", (b, s, d)), ("att_causal", (b, s, d)),
            ("att_bias_out", (b, s, d)), ("att_sizes", (b, s, 4)), ("mha", (b, s, d)),
            ("mha_present_k", (b, n, l, d // n)), ("mha_present_v", (b, n, l, d // n)),
            ("mha_causal", (b, s, d))]
    m = model("attention", nodes, [vi(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
              [vi(o, T.FLOAT, sh) for o, sh in outs],
              [init("w", f32((d, 3 * d), 0.3)), init("bqkv", f32((3 * d,), 0.1)),
               init("att_bias", f32((1, n, s, s))), init("w_sizes", f32((d, 20), 0.3)),
               init("bmha", f32((3 * d,), 0.1))])
    save_case("attention", m, feeds)


def qlinear():
    """QLinearAdd and QLinearMul (uint8, broadcast; int8), QLinearSigmoid, QLinearLeakyRelu,
    QLinearGlobalAveragePool (NCHW and channels-last), QLinearConcat (inputs requantized) and
    QGemm (quantized output with an int32 bias; float output with per-column scales and zero
    points, alpha)."""
    u8, i8 = np.uint8, np.int8
    f = lambda v: np.array(v, np.float32)
    nodes = [
        h.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["add"],
                    domain=MS),
        h.make_node("QLinearMul", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["mul"],
                    domain=MS),
        h.make_node("QLinearAdd", ["a8", "sa", "z8", "b8", "sb", "z8", "sc", "z8"], ["add8"],
                    domain=MS),
        h.make_node("QLinearMul", ["a8", "sa", "z8", "b8", "sb", "z8", "sc", "z8"], ["mul8"],
                    domain=MS),
        h.make_node("QLinearSigmoid", ["a", "sa", "za", "sy", "zy"], ["sigmoid"], domain=MS),
        h.make_node("QLinearLeakyRelu", ["a", "sa", "za", "sc", "zc"], ["leaky"], domain=MS,
                    alpha=0.1),
        h.make_node("QLinearGlobalAveragePool", ["img", "sa", "za", "sc", "zc"], ["gap"],
                    domain=MS),
        h.make_node("QLinearGlobalAveragePool", ["img", "sa", "za", "sc", "zc"], ["gap_nhwc"],
                    domain=MS, channels_last=1),
        h.make_node("QLinearConcat", ["sc", "zc", "a", "sa", "za", "c2", "sc", "zc"], ["concat"],
                    domain=MS, axis=1),
        h.make_node("QGemm", ["ga", "sa", "za", "gw", "sw", "zw", "gc", "sc", "zc"], ["qgemm"],
                    domain=MS, transB=1),
        h.make_node("QGemm", ["ga", "sa", "za", "gw2", "sw_col", "zw_col"], ["qgemm_float"],
                    domain=MS, alpha=0.5),
    ]
    feeds = {
        "a": rng.integers(0, 256, (2, 6, 8), dtype=u8),
        "b": rng.integers(0, 256, (6, 8), dtype=u8),
        "a8": rng.integers(-128, 128, (2, 6, 8), dtype=i8),
        "b8": rng.integers(-128, 128, (2, 6, 8), dtype=i8),
        "img": rng.integers(0, 256, (2, 3, 4, 5), dtype=u8),
        "c2": rng.integers(0, 256, (2, 3, 8), dtype=u8),
        "ga": rng.integers(0, 256, (4, 16), dtype=u8),
    }
    inits = [init("sa", f(0.05)), init("za", np.array(128, u8)), init("sb", f(0.03)),
             init("zb", np.array(100, u8)), init("sc", f(0.07)), init("zc", np.array(120, u8)),
             init("z8", np.array(3, i8)), init("sy", f(1 / 256)), init("zy", np.array(0, u8)),
             init("gw", rng.integers(-127, 128, (10, 16), dtype=i8)),
             init("gw2", rng.integers(-127, 128, (16, 10), dtype=i8)),
             init("sw", f(0.02)), init("zw", np.array(0, i8)),
             init("sw_col", (rng.random(10) * 0.03 + 0.005).astype(np.float32)),
             init("zw_col", rng.integers(-3, 4, (10,), dtype=i8)),
             init("gc", rng.integers(-2000, 2000, (10,), dtype=np.int32))]
    elem = {np.dtype(u8): T.UINT8, np.dtype(i8): T.INT8}
    outs = [("add", T.UINT8, (2, 6, 8)), ("mul", T.UINT8, (2, 6, 8)),
            ("add8", T.INT8, (2, 6, 8)), ("mul8", T.INT8, (2, 6, 8)),
            ("sigmoid", T.UINT8, (2, 6, 8)), ("leaky", T.UINT8, (2, 6, 8)),
            ("gap", T.UINT8, (2, 3, 1, 1)), ("gap_nhwc", T.UINT8, (2, 1, 1, 5)),
            ("concat", T.UINT8, (2, 9, 8)), ("qgemm", T.UINT8, (4, 10)),
            ("qgemm_float", T.FLOAT, (4, 10))]
    m = model("qlinear", nodes, [vi(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
              [vi(o, t, s) for o, t, s in outs], inits)
    save_case("qlinear", m, feeds)


def bert_block(opset=13):
    """A tiny BERT-like encoder layer written with plain ONNX ops, the way PyTorch's exporter
    writes one: projections as MatMul + Add, the attention pattern with a key mask, LayerNorm
    and Gelu spelled out, residuals."""
    b, s, d, n = 1, 8, 16, 2
    hd = d // n
    nodes, inits = [], []

    def w(name, shape, scale=0.2):
        inits.append(init(name, f32(shape, scale)))
        return name

    def const(name, value):
        inits.append(init(name, value))
        return name

    def linear(x, name, din, dout):
        nodes.append(h.make_node("MatMul", [x, w(name + ".weight", (din, dout))], [name + "_mm"]))
        nodes.append(h.make_node("Add", [name + "_mm", w(name + ".bias", (dout,), 0.05)],
                                 [name + "_out"]))
        return name + "_out"

    def layer_norm(x, name):
        nodes.extend([
            h.make_node("ReduceMean", [x], [name + "_mu"], axes=[-1]),
            h.make_node("Sub", [x, name + "_mu"], [name + "_c"]),
            h.make_node("Pow", [name + "_c", const(name + "_two", np.array(2.0, np.float32))],
                        [name + "_sq"]),
            h.make_node("ReduceMean", [name + "_sq"], [name + "_var"], axes=[-1]),
            h.make_node("Add", [name + "_var", const(name + "_eps", np.array(1e-12, np.float32))],
                        [name + "_ve"]),
            h.make_node("Sqrt", [name + "_ve"], [name + "_std"]),
            h.make_node("Div", [name + "_c", name + "_std"], [name + "_n"]),
            h.make_node("Mul", [name + "_n", w(name + ".weight", (d,), 0.1)], [name + "_g"]),
            h.make_node("Add", [name + "_g", w(name + ".bias", (d,), 0.1)], [name + "_out"]),
        ])
        return name + "_out"

    def heads(x, name, perm):
        nodes.append(h.make_node("Reshape", [x, const(name + "_shape",
                                                      np.array([0, 0, n, hd], np.int64))],
                                 [name + "_r"]))
        nodes.append(h.make_node("Transpose", [name + "_r"], [name + "_t"], perm=perm))
        return name + "_t"

    # The embeddings' LayerNorm feeds the layer, as in BERT.
    x = layer_norm("x", "ln0")
    q = heads(linear(x, "query", d, d), "q", [0, 2, 1, 3])
    kt = heads(linear(x, "key", d, d), "k", [0, 2, 3, 1])
    v = heads(linear(x, "value", d, d), "v", [0, 2, 1, 3])
    nodes.extend([
        h.make_node("MatMul", [q, kt], ["scores"]),
        h.make_node("Div", ["scores", const("sqrt_hd", np.array(np.sqrt(hd), np.float32))],
                    ["scaled"]),
        h.make_node("Unsqueeze", ["mask", const("mask_axis1", np.array([1], np.int64))],
                    ["mask3"]),
        h.make_node("Unsqueeze", ["mask3", const("mask_axis2", np.array([2], np.int64))],
                    ["mask4"]),
        h.make_node("Cast", ["mask4"], ["maskf"], to=T.FLOAT),
        h.make_node("Sub", [const("one", np.array(1.0, np.float32)), "maskf"], ["inv_mask"]),
        h.make_node("Mul", ["inv_mask", const("neg", np.array(-10000.0, np.float32))],
                    ["mask_add"]),
        h.make_node("Add", ["scaled", "mask_add"], ["masked"]),
        h.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        h.make_node("MatMul", ["probs", v], ["ctx"]),
        h.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["ctx_t", const("ctx_shape", np.array([0, 0, d], np.int64))],
                    ["ctx_r"]),
    ])
    attn = linear("ctx_r", "attn_out", d, d)
    nodes.append(h.make_node("Add", [attn, x], ["res1"]))
    ln1 = layer_norm("res1", "ln1")
    ffn = linear(ln1, "ffn_in", d, 4 * d)
    nodes.extend([
        h.make_node("Div", [ffn, const("sqrt2", np.array(np.sqrt(2.0), np.float32))], ["g_d"]),
        h.make_node("Erf", ["g_d"], ["g_e"]),
        h.make_node("Add", ["g_e", const("g_one", np.array(1.0, np.float32))], ["g_a"]),
        h.make_node("Mul", [ffn, "g_a"], ["g_m"]),
        h.make_node("Mul", ["g_m", const("g_half", np.array(0.5, np.float32))], ["gelu"]),
    ])
    ffn2 = linear("gelu", "ffn_out", 4 * d, d)
    nodes.append(h.make_node("Add", [ffn2, ln1], ["res2"]))
    layer_norm("res2", "ln2")
    g = h.make_graph(nodes, "bert_block",
                     [vi("x", T.FLOAT, (b, s, d)), vi("mask", T.INT64, (b, s))],
                     [vi("ln2_out", T.FLOAT, (b, s, d))], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    mask = np.ones((b, s), np.int64)
    mask[0, 6:] = 0
    return m, {"x": f32((b, s, d)), "mask": mask}


# MatMulAddFusion (a basic-level rewrite) turns the projections into Reshape + Gemm + Reshape
# before the extended level's AttentionFusion looks for MatMul + Add; without it ONNX Runtime
# fuses the attention too, as its transformer optimizer does.
DISABLED = ["MatMulAddFusion"]


def ort_optimized_bert():
    """The BERT-like block as ONNX Runtime's graph optimizer saves it (ORT_ENABLE_EXTENDED on
    the CPU provider): the contrib ops it fuses (Attention, SkipLayerNormalization, BiasGelu,
    Gelu, LayerNormalization, ...) are what the model holds. The reference outputs are ONNX
    Runtime's on the unoptimized block."""
    m, feeds = bert_block()
    tmp = os.path.join(HERE, "ort_optimized_bert.tmp.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = tmp
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"],
                         disabled_optimizers=DISABLED)
    opt = onnx.load(tmp)
    os.remove(tmp)
    save_case("ort_optimized_bert", opt, feeds, run_model=m)
    return sorted({(n.domain or "ai.onnx") + "." + n.op_type for n in opt.graph.node})


def ort_transformers_bert():
    """The BERT-like block as ONNX Runtime's transformer optimizer
    (onnxruntime.transformers.optimizer, model_type bert; it needs sympy) writes it: one
    Attention (its key mask reduced to end positions), SkipLayerNormalization, BiasGelu. The
    reference outputs are ONNX Runtime's on the unoptimized block."""
    from onnxruntime.transformers import optimizer
    m, feeds = bert_block()
    tmp = os.path.join(HERE, "ort_transformers_bert.tmp.onnx")
    onnx.save(m, tmp)
    opt = optimizer.optimize_model(tmp, model_type="bert", num_heads=2, hidden_size=16,
                                   opt_level=0).model
    os.remove(tmp)
    save_case("ort_transformers_bert", opt, feeds, run_model=m)
    return sorted({(n.domain or "ai.onnx") + "." + n.op_type for n in opt.graph.node})


def dynamic_quantize_lstm():
    """DynamicQuantizeLSTM as ONNX Runtime's dynamic quantizer writes it for an LSTM:
    bidirectional, int8 weights with a scale per direction (W) and per gate column (R), biases,
    a given initial state. Two threads for the batch of two: ONNX Runtime then quantizes each
    batch row's hidden state on its own, as the lowering does (on one thread it quantizes the
    batch together)."""
    s, b, i, hs = 5, 2, 3, 4
    nodes = [h.make_node("DynamicQuantizeLSTM",
                         ["x", "w", "r", "bias", "", "h0", "c0", "", "ws", "wz", "rs", "rz"],
                         ["y", "y_h", "y_c"], domain=MS, hidden_size=hs,
                         direction="bidirectional", name="lstm_0")]
    feeds = {"x": f32((s, b, i)), "h0": f32((2, b, hs), 0.5), "c0": f32((2, b, hs), 0.5)}
    inits = [init("w", rng.integers(-127, 128, (2, i, 4 * hs), dtype=np.int8)),
             init("r", rng.integers(-127, 128, (2, hs, 4 * hs), dtype=np.int8)),
             init("bias", f32((2, 8 * hs), 0.1)),
             init("ws", np.array([0.004, 0.006], np.float32)),
             init("wz", np.zeros(2, np.int8)),
             init("rs", (rng.random((2, 4 * hs)) * 0.004 + 0.002).astype(np.float32)),
             init("rz", np.zeros((2, 4 * hs), np.int8))]
    m = model("dynamic_quantize_lstm", nodes, [vi(k, T.FLOAT, v.shape) for k, v in feeds.items()],
              [vi("y", T.FLOAT, (s, 2, b, hs)), vi("y_h", T.FLOAT, (2, b, hs)),
               vi("y_c", T.FLOAT, (2, b, hs))], inits)
    save_case("dynamic_quantize_lstm", m, feeds, threads=2)


def refused():
    """Contrib ops not lowered, each refused by name: GroupQueryAttention, and Attention with a
    past state (the input named in the refusal). No data set: these models must not load."""
    d = os.path.join(HERE, "refused")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    gqa = model("group_query_attention", [
        h.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "seqlens", "total"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=2, kv_num_heads=1,
                    name="gqa_0")],
        [vi("q", T.FLOAT, (1, 3, 8)), vi("k", T.FLOAT, (1, 3, 4)), vi("v", T.FLOAT, (1, 3, 4))],
        [vi("y", T.FLOAT, (1, 3, 8))],
        [init("seqlens", np.array([2], np.int32)), init("total", np.array(3, np.int32))])
    onnx.save(gqa, os.path.join(d, "group_query_attention.onnx"))
    b, s, dd, n, past = 1, 2, 4, 2, 3
    att = model("attention_past", [
        h.make_node("Attention", ["x", "w", "b", "", "past"], ["y", "present"], domain=MS,
                    num_heads=n, name="attention_with_past")],
        [vi("x", T.FLOAT, (b, s, dd)), vi("past", T.FLOAT, (2, b, n, past, dd // n))],
        [vi("y", T.FLOAT, (b, s, dd)), vi("present", T.FLOAT, (2, b, n, past + s, dd // n))],
        [init("w", f32((dd, 3 * dd))), init("b", f32((3 * dd,)))])
    onnx.save(att, os.path.join(d, "attention_past.onnx"))


if __name__ == "__main__":
    fused_matmul()
    gelu_family()
    layer_norms()
    attention()
    qlinear()
    dynamic_quantize_lstm()
    fused_conv()
    integer_matmuls()
    embed_layer_norm()
    print("ONNX Runtime's optimizer wrote:", ", ".join(ort_optimized_bert()))
    refused()
    print("ONNX Runtime's transformer optimizer wrote:", ", ".join(ort_transformers_bert()))
    sys.exit(0)
