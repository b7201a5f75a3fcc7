#!/usr/bin/env python3
"""Writes the ONNX seeds of the import and model fuzz targets: small models of the operator
families the importer and the lowering take (element-wise chains, GEMM and MatMul with an
epilogue, convolution and pooling, softmax, normalization, data movement, reductions,
recurrence), each a few hundred bytes so mutations stay cheap. Needs the `onnx` Python package;
the files it writes are committed. Usage: tests/fuzz/corpus/make_onnx_seeds.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
f32 = TensorProto.FLOAT


def vi(name, shape, t=f32):
    return helper.make_tensor_value_info(name, t, shape)


def init(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    data = m.SerializeToString()
    for target in ("import", "model"):
        with open(os.path.join(here, target, name + ".onnx"), "wb") as f:
            f.write(data)


N = helper.make_node
save("elementwise", [N("Add", ["x", "y"], ["a"]), N("Relu", ["a"], ["b"]),
                     N("Mul", ["b", "y"], ["c"]), N("Tanh", ["c"], ["z"])],
     [vi("x", [2, 8]), vi("y", [8])], [vi("z", [2, 8])])
save("gemm_bias_gelu", [N("Gemm", ["x", "w", "b"], ["g"], transB=1), N("Erf", ["g"], ["e"]),
                        N("Mul", ["g", "e"], ["z"])],
     [vi("x", [4, 16])], [vi("z", [4, 8])], [init("w", [8, 16]), init("b", [8])])
save("matmul_softmax", [N("MatMul", ["q", "k"], ["s"]), N("Softmax", ["s"], ["p"], axis=-1),
                        N("MatMul", ["p", "v"], ["z"])],
     [vi("q", [1, 6, 8]), vi("k", [1, 8, 6]), vi("v", [1, 6, 8])], [vi("z", [1, 6, 8])])
save("conv_pool", [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], group=2),
                   N("Relu", ["c"], ["r"]), N("MaxPool", ["r"], ["z"], kernel_shape=[2, 2],
                                                  strides=[2, 2])],
     [vi("x", [1, 4, 8, 8])], [vi("z", [1, 4, 4, 4])], [init("w", [4, 2, 3, 3]), init("b", [4])])
save("layernorm", [N("LayerNormalization", ["x", "s", "b"], ["z"], axis=-1, epsilon=1e-5)],
     [vi("x", [3, 16])], [vi("z", [3, 16])], [init("s", [16]), init("b", [16])])
save("reshape_transpose", [N("Reshape", ["x", "shape"], ["r"]),
                           N("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
                           N("Slice", ["t", "st", "en", "ax"], ["z"])],
     [vi("x", [2, 24])], [vi("z", [2, 2, 3, 4])],
     [numpy_helper.from_array(np.array([2, 3, 2, 4], np.int64), "shape"),
      numpy_helper.from_array(np.array([0], np.int64), "st"),
      numpy_helper.from_array(np.array([2], np.int64), "en"),
      numpy_helper.from_array(np.array([1], np.int64), "ax")])
save("reduce_concat", [N("ReduceMean", ["x", "axes"], ["m"], keepdims=1),
                       N("Sub", ["x", "m"], ["d"]), N("Concat", ["d", "x"], ["z"], axis=1)],
     [vi("x", [3, 5])], [vi("z", [3, 10])],
     [numpy_helper.from_array(np.array([1], np.int64), "axes")], opset=18)
save("gru", [N("GRU", ["x", "w", "r"], ["", "h"], hidden_size=4)],
     [vi("x", [3, 1, 2])], [vi("h", [1, 1, 4])], [init("w", [1, 12, 2]), init("r", [1, 12, 4])])
save("gather_where", [N("Gather", ["t", "i"], ["g"], axis=0), N("Greater", ["g", "zero"], ["c"]),
                      N("Where", ["c", "g", "zero"], ["z"])],
     [vi("i", [3], TensorProto.INT64)], [vi("z", [3, 4])],
     [init("t", [5, 4]), numpy_helper.from_array(np.zeros([1], np.float32), "zero")])
