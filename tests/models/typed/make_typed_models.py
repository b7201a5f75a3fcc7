#!/usr/bin/env python3
"""Writes the small typed test models of tests/models/typed: int8 and uint8 QDQ models made by
ONNX Runtime's static quantizer, and an fp16 model, each with one data set whose reference
outputs ONNX Runtime computes (backend-test layout). Run with a Python that has numpy, onnx and
onnxruntime:  VENV/bin/python tests/models/typed/make_typed_models.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(14)


def weight(name, shape, dtype=np.float32, scale=0.3):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(dtype), name)


def save_case(name, model_path, inputs):
    """Runs the model in ONNX Runtime and writes test_data_set_0 next to it."""
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    outs = sess.run(None, inputs)
    d = os.path.join(HERE, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    for k, (key, v) in enumerate(inputs.items()):
        with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, key).SerializeToString())
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(nh.from_array(v, o.name).SerializeToString())


def model(nodes, name, inputs, outputs, inits):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


class Reader(CalibrationDataReader):
    def __init__(self, name, shape):
        self.data = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(16)])

    def get_next(self):
        return next(self.data, None)


def quantized(name, float_model, input_name, shape, activation_type, per_channel):
    os.makedirs(os.path.join(HERE, name), exist_ok=True)
    tmp = os.path.join(HERE, name, "float.onnx")
    onnx.save(float_model, tmp)
    out = os.path.join(HERE, name, "model.onnx")
    quantize_static(tmp, out, Reader(input_name, shape), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel, activation_type=activation_type,
                    weight_type=QuantType.QInt8)
    os.remove(tmp)
    save_case(name, out, {input_name: rng.standard_normal(shape).astype(np.float32)})


def int8_cnn():
    """Conv, Conv, global pool, Gemm (transB), MatMul: int8 activations, per-channel weights."""
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Relu", ["c2"], ["r2"]),
        h.make_node("GlobalAveragePool", ["r2"], ["p"]),
        h.make_node("Flatten", ["p"], ["f"]),
        h.make_node("Gemm", ["f", "w3", "b3"], ["g"], transB=1),
        h.make_node("MatMul", ["g", "w4"], ["y"]),
    ]
    m = model(nodes, "int8_cnn", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 12, 12])],
              [h.make_tensor_value_info("y", T.FLOAT, [1, 10])],
              [weight("w1", (16, 3, 3, 3)), weight("b1", (16,)), weight("w2", (16, 16, 3, 3)),
               weight("b2", (16,)), weight("w3", (32, 16)), weight("b3", (32,)),
               weight("w4", (32, 10))])
    quantized("int8_cnn", m, "x", (1, 3, 12, 12), QuantType.QInt8, True)


def uint8_mlp():
    """A transformer-style MLP on tokens: uint8 activations, per-tensor int8 weights."""
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["m1"]),
        h.make_node("Add", ["m1", "b1"], ["a1"]),
        h.make_node("Relu", ["a1"], ["r1"]),
        h.make_node("MatMul", ["r1", "w2"], ["m2"]),
        h.make_node("Add", ["m2", "b2"], ["y"]),
    ]
    m = model(nodes, "uint8_mlp", [h.make_tensor_value_info("x", T.FLOAT, [1, 16, 32])],
              [h.make_tensor_value_info("y", T.FLOAT, [1, 16, 32])],
              [weight("w1", (32, 64)), weight("b1", (64,)), weight("w2", (64, 32)),
               weight("b2", (32,))])
    quantized("uint8_mlp", m, "x", (1, 16, 32), QuantType.QUInt8, False)


def fp16_attention():
    """fp16 storage end to end: projections, scores, softmax, weighted sum, LayerNorm."""
    f16 = np.float16
    nodes = [
        h.make_node("MatMul", ["x", "wq"], ["q"]),
        h.make_node("MatMul", ["x", "wk"], ["k"]),
        h.make_node("MatMul", ["x", "wv"], ["v"]),
        h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["q", "kt"], ["s"]),
        h.make_node("Mul", ["s", "scale"], ["ss"]),
        h.make_node("Softmax", ["ss"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "v"], ["o"]),
        h.make_node("Add", ["o", "x"], ["res"]),
        h.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1),
    ]
    m = model(nodes, "fp16_attention", [h.make_tensor_value_info("x", T.FLOAT16, [1, 16, 32])],
              [h.make_tensor_value_info("y", T.FLOAT16, [1, 16, 32])],
              [weight("wq", (32, 32), f16, 0.2), weight("wk", (32, 32), f16, 0.2),
               weight("wv", (32, 32), f16, 0.2),
               nh.from_array(np.array(1 / np.sqrt(32), dtype=f16), "scale"),
               nh.from_array(np.ones(32, dtype=f16), "gamma"),
               nh.from_array(np.zeros(32, dtype=f16), "beta")])
    os.makedirs(os.path.join(HERE, "fp16_attention"), exist_ok=True)
    path = os.path.join(HERE, "fp16_attention", "model.onnx")
    onnx.save(m, path)
    save_case("fp16_attention", path, {"x": rng.standard_normal((1, 16, 32)).astype(f16)})


if __name__ == "__main__":
    int8_cnn()
    uint8_mlp()
    fp16_attention()
