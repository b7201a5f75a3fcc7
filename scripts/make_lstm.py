#!/usr/bin/env python3
"""Writes a stacked LSTM ONNX model without torch: the graph scripts/export_models.py exports from
its StackedLstm (one ONNX LSTM node per layer, each layer's Y squeezed into the next layer's
input; y, h_n and c_n as outputs), with random weights of a fixed seed and zero initial states.

    make_lstm.py --out DIR                 the paper's full size: 10 layers, hidden 256, 100 steps
    make_lstm.py --out DIR --layers 2 --hidden 64 --steps 16

writes DIR/model.onnx (about 21 MB at full size). Needs numpy and onnx.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers, hidden, steps, input_size, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    scale = 1.0 / np.sqrt(hidden)

    def init(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    axes = "squeeze_axes"
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), axes))
    x = "sequence"
    hs, cs = [], []
    for l in range(layers):
        n_in = input_size if l == 0 else hidden
        w = init(f"lstm.W_{l}", rng.uniform(-scale, scale, (1, 4 * hidden, n_in)))
        r = init(f"lstm.R_{l}", rng.uniform(-scale, scale, (1, 4 * hidden, hidden)))
        b = init(f"lstm.B_{l}", rng.uniform(-scale, scale, (1, 8 * hidden)))
        h0 = init(f"lstm.h0_{l}", np.zeros((1, 1, hidden)))
        c0 = init(f"lstm.c0_{l}", np.zeros((1, 1, hidden)))
        name = "/lstm/LSTM" + ("" if l == 0 else f"_{l}")
        y, yh, yc = f"{name}_output_0", f"{name}_output_1", f"{name}_output_2"
        nodes.append(helper.make_node("LSTM", [x, w, r, b, "", h0, c0], [y, yh, yc], name=name,
                                      hidden_size=hidden))
        out = "y" if l == layers - 1 else f"/lstm/Squeeze_{l}_output_0"
        nodes.append(helper.make_node("Squeeze", [y, axes], [out], name=f"/lstm/Squeeze_{l}"))
        x = out
        hs.append(yh)
        cs.append(yc)
    nodes.append(helper.make_node("Concat", hs, ["h_n"], name="/lstm/Concat_h", axis=0))
    nodes.append(helper.make_node("Concat", cs, ["c_n"], name="/lstm/Concat_c", axis=0))
    graph = helper.make_graph(
        nodes, "stacked_lstm",
        [helper.make_tensor_value_info("sequence", TensorProto.FLOAT, [steps, 1, input_size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, 1, hidden]),
         helper.make_tensor_value_info("h_n", TensorProto.FLOAT, [layers, 1, hidden]),
         helper.make_tensor_value_info("c_n", TensorProto.FLOAT, [layers, 1, hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--input", type=int, default=256)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    onnx.save(build(a.layers, a.hidden, a.steps, a.input), os.path.join(a.out, "model.onnx"))


if __name__ == "__main__":
    main()
