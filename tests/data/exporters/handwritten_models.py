"""Writes models in the habits of other exporters, each with a data set of ONNX Runtime's
outputs (numpy's where ONNX Runtime does not run it), written with the onnx package:

paddle_unknown_dims/  Paddle2ONNX's way of writing an unknown size: dim_value -1 on the input's
                      batch dim, on the output and in value_info (a claim, not an input).
if_on_input/          a voice-activity-style model whose top-level If depends on a scalar input
                      (a sample rate): the then branch runs a 16 kHz head, the else branch
                      frames the input for an LSTM, which is invalid for these shapes (16
                      samples do not make a frame of 24); ONNX Runtime runs only the branch
                      taken.

Run with onnx and numpy (and onnxruntime for the reference) installed:
    python3 handwritten_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(7)


def write_set(folder, index, inputs, outputs):
    data = os.path.join(folder, "test_data_set_%d" % index)
    os.makedirs(data, exist_ok=True)
    for kind, values in (("input", inputs), ("output", outputs)):
        for k, (name, value) in enumerate(values):
            with open(os.path.join(data, "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())


def run_reference(model, feeds, fallback):
    try:
        import onnxruntime

        sess = onnxruntime.InferenceSession(model.SerializeToString())
        return sess.run(None, feeds)
    except ImportError:
        return fallback(feeds)


def save(model, folder):
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))


def paddle_unknown_dims():
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    out = "save_infer_model/scale_0.tmp_1"
    nodes = [
        helper.make_node("MatMul", ["x", "fc_0.w_0"], ["fc_0.tmp_0"], name="matmul_0"),
        helper.make_node("Add", ["fc_0.tmp_0", "fc_0.b_0"], ["fc_0.tmp_1"], name="elementwise_add_0"),
        helper.make_node("Softmax", ["fc_0.tmp_1"], ["softmax_0.tmp_0"], axis=-1, name="softmax_0"),
        helper.make_node("Identity", ["softmax_0.tmp_0"], [out], name="scale_0"),
    ]
    graph = helper.make_graph(
        nodes,
        "paddle_unknown_dims",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [-1, 3])],
        [numpy_helper.from_array(w, "fc_0.w_0"), numpy_helper.from_array(b, "fc_0.b_0")],
        value_info=[
            helper.make_tensor_value_info("fc_0.tmp_0", TensorProto.FLOAT, [-1, 3]),
            helper.make_tensor_value_info("fc_0.tmp_1", TensorProto.FLOAT, [-1, -1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)],
                              producer_name="PaddlePaddle")
    model.ir_version = 6
    folder = os.path.join(HERE, "paddle_unknown_dims")
    save(model, folder)
    x = RNG.standard_normal((1, 4)).astype(np.float32)

    def by_numpy(feeds):
        z = feeds["x"] @ w + b
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return [e / e.sum(axis=-1, keepdims=True)]

    y = run_reference(model, {"x": x}, by_numpy)[0]
    write_set(folder, 0, [("x", x)], [(out, y)])


def if_on_input():
    w = (0.3 * RNG.standard_normal((16, 4))).astype(np.float32)
    then_branch = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "head_w"], ["logits"], name="head/MatMul"),
            helper.make_node("Sigmoid", ["logits"], ["prob16k"], name="head/Sigmoid"),
        ],
        "then_16k",
        [],
        [helper.make_tensor_value_info("prob16k", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(w, "head_w")],
    )
    hidden = 4
    lw = (0.3 * RNG.standard_normal((1, 4 * hidden, 24))).astype(np.float32)
    lr = (0.3 * RNG.standard_normal((1, 4 * hidden, hidden))).astype(np.float32)
    else_branch = helper.make_graph(
        [
            # Frames of 24 samples at 8 kHz: x holds 16, so this branch is invalid here.
            helper.make_node("Reshape", ["x", "frames"], ["x3d"], name="decoder/Reshape"),
            helper.make_node("LSTM", ["x3d", "lstm_w", "lstm_r"], ["", "y_h"], hidden_size=hidden,
                             name="decoder/rnn/LSTM"),
            helper.make_node("Sigmoid", ["y_h"], ["prob8k_3d"], name="decoder/Sigmoid"),
            helper.make_node("Squeeze", ["prob8k_3d", "axis0"], ["prob8k"], name="decoder/Squeeze"),
        ],
        "else_8k",
        [],
        [helper.make_tensor_value_info("prob8k", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(lw, "lstm_w"), numpy_helper.from_array(lr, "lstm_r"),
         numpy_helper.from_array(np.array([1, 1, 24], np.int64), "frames"),
         numpy_helper.from_array(np.array([0], np.int64), "axis0")],
    )
    nodes = [
        helper.make_node("Equal", ["sr", "sr16k"], ["is16k"], name="sr_check"),
        helper.make_node("If", ["is16k"], ["prob"], then_branch=then_branch,
                         else_branch=else_branch, name="If_0"),
    ]
    graph = helper.make_graph(
        nodes,
        "vad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(np.array(16000, np.int64), "sr16k")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="handwritten")
    model.ir_version = 7
    folder = os.path.join(HERE, "if_on_input")
    save(model, folder)

    def by_numpy(feeds):
        return [1 / (1 + np.exp(-(feeds["x"] @ w)))]

    for k in range(2):
        x = RNG.standard_normal((1, 16)).astype(np.float32)
        sr = np.array(16000, np.int64)
        y = run_reference(model, {"x": x, "sr": sr}, by_numpy)[0]
        write_set(folder, k, [("x", x), ("sr", sr)], [("prob", y)])


if __name__ == "__main__":
    paddle_unknown_dims()
    if_on_input()
