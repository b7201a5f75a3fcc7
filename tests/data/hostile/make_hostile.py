#!/usr/bin/env python3
"""Writes the hostile corpus: files a user might be handed that the project must refuse with a
clear error naming the file and the reason (see cases.txt and check_hostile.sh, a CTest test).
Needs the `onnx` Python package; the files it writes are committed, so tests do not need it.
Usage: tests/data/hostile/make_hostile.py"""
import json
import os
import random

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", "..", ".."))


def out(name, data):
    with open(os.path.join(here, name), "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


f32 = TensorProto.FLOAT
x = helper.make_tensor_value_info("x", f32, [4])
y = helper.make_tensor_value_info("y", f32, [4])

sample = open(os.path.join(root, "sample_models", "mmoe", "model.onnx"), "rb").read()
out("truncated.onnx", sample[: len(sample) // 2])
rng = random.Random(17)
flipped = bytearray(sample)
for _ in range(40):
    i = rng.randrange(len(flipped))
    flipped[i] ^= 1 << rng.randrange(8)
out("bitflip.onnx", bytes(flipped))
out("empty.onnx", b"")
out("text.onnx", "this is not a model\n")

# a -> b -> a: no topological order.
out("cycle.onnx", model([helper.make_node("Relu", ["b"], ["a"], name="first"),
                         helper.make_node("Relu", ["a"], ["b"], name="second"),
                         helper.make_node("Add", ["x", "b"], ["y"], name="add")], [x], [y]))
# An input nobody produces.
out("dangling.onnx", model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [x], [y]))
# Two nodes write one value.
out("two_writers.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="one"),
                               helper.make_node("Neg", ["x"], ["y"], name="two")], [x], [y]))
# Absurd and negative input dimensions.
big = helper.make_tensor_value_info("x", f32, [1 << 40, 1 << 30])
out("absurd_dims.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [big],
                              [helper.make_tensor_value_info("y", f32, [1 << 40, 1 << 30])]))
neg = helper.make_tensor_value_info("x", f32, [-5, 4])
out("negative_dims.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [neg],
                                [helper.make_tensor_value_info("y", f32, [-5, 4])]))
# A 10^12-element initializer that declares its size and carries no data.
w = TensorProto()
w.name = "w"
w.data_type = f32
w.dims.extend([1000000, 1000000])
out("huge_tensor.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [x], [y],
                              [w]))


def external(location):
    t = TensorProto()
    t.name = "w"
    t.data_type = f32
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [x], [y], [t])


out("external_escape.onnx", external("../../../../../../etc/passwd"))
out("external_absolute.onnx", external("/etc/passwd"))
out("external_device.onnx", external("/dev/zero"))

# If nested DEPTH deep: subgraphs within subgraphs. 30 deep (90 levels of protobuf messages) is
# about what protobuf parsers accept and must plan (a CTest test); 60 deep must be refused.
cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
def leaf(name):
    return helper.make_graph([helper.make_node("Identity", ["x"], [name], name="leaf")], "leaf",
                             [], [helper.make_tensor_value_info(name, f32, [4])])


def varint(n):
    b = bytearray()
    while True:
        b.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(b)


def field(number, payload):
    """A length-delimited protobuf field (strings and messages)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def nested(depth):
    """A model of `depth` If nodes, each in the then branch of the next, encoded by hand: the
    onnx package refuses to build messages nested deeper than its parser accepts."""
    def graph(node, name, inputs, outputs):  # GraphProto: node 1, name 2, input 11, output 12
        return (field(1, node) + field(2, name.encode()) +
                b"".join(field(11, v.SerializeToString()) for v in inputs) +
                b"".join(field(12, v.SerializeToString()) for v in outputs))

    def attr(name, g):  # AttributeProto: name 1, g 6, type 20 = GRAPH (5)
        return field(1, name.encode()) + field(6, g) + varint(20 << 3) + varint(5)

    def if_node(d, then_branch):  # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
        return (field(1, b"c") + field(2, f"y{d + 1}".encode()) + field(3, f"if{d}".encode()) +
                field(4, b"If") + field(5, attr("then_branch", then_branch)) +
                field(5, attr("else_branch", leaf(f"e{d}").SerializeToString())))

    def out_of(d):
        return helper.make_tensor_value_info(f"y{d}", f32, [4])

    inner = leaf("y0").SerializeToString()
    for d in range(depth - 1):
        inner = graph(if_node(d, inner), f"level{d}", [], [out_of(d + 1)])
    top = graph(if_node(depth - 1, inner), "nested", [x, cond], [out_of(depth)])
    opset = field(1, b"") + varint(2 << 3) + varint(17)  # OperatorSetIdProto: domain 1, version 2
    return varint(1 << 3) + varint(8) + field(7, top) + field(8, opset)  # ModelProto


out("nested.onnx", nested(30))
out("nested_deep.onnx", nested(60))

# Projects.
def project(**kw):
    p = {"version": 1, "model": "../../../sample_models/mmoe/model.onnx", "strategy": "souffle",
         "gpu": "A100", "precision": "fp32", "te_level": False, "decisions": {"version": 1,
                                                                            "edits": []}}
    p.update(kw)
    return json.dumps(p, indent=1) + "\n"


good = project(decisions={"version": 1, "edits": [{"kind": "split", "at": "/ReduceSum"}]})
out("truncated.souffle", good[: len(good) // 2])
out("future.souffle", project(version=99))
out("model_escapes.souffle", project())
out("model_is_device.souffle", project(model="/dev/zero"))
out("model_is_folder.souffle", project(model="."))
out("bad_decisions.souffle", project(model="text.onnx", decisions={"version": 1, "edits": [
    {"kind": "melt", "a": "x"}]}))

# Decisions.
out("unknown_nodes.json", json.dumps({"version": 1, "edits": [
    {"kind": "split", "at": "/no/such/node"}, {"kind": "merge", "a": "/ReduceSum", "b": "/ghost"}]}))
out("unknown_site.json", json.dumps({"version": 1, "edits": [
    {"kind": "force", "site": "horizontal:/nowhere"}]}))
out("bad_kind.json", json.dumps({"version": 1, "edits": [{"kind": "melt", "a": "/ReduceSum"}]}))
out("future_decisions.json", json.dumps({"version": 7, "edits": []}))
out("truncated_decisions.json", '{"version": 1, "edits": [{"kind": "split", "at": "/Redu')

# GPU specs.
spec = json.load(open(os.path.join(root, "resources", "gpus.json")))["gpus"][0]


def gpus(**kw):
    s = dict(spec)
    s.update(kw, name="hostile", aliases=[])
    return json.dumps({"version": 1, "gpus": [s]}, indent=1) + "\n"


out("zero_sms.json", gpus(sm_count=0))
out("absurd_spec.json", gpus(max_shared_memory_per_block=1 << 62, dram_bandwidth_gbps=-3.0))
out("no_threads.json", gpus(max_threads_per_block=0, warp_size=0))

# Calibration files.
out("negative_calibration.json", json.dumps({"version": 1, "device": "x",
                                             "launch_overhead_us": -1}))
out("unordered_calibration.json", json.dumps({"version": 1, "device": "x", "grid_barrier": [
    {"blocks": 264, "blocks_per_sm": 2, "threads": 256, "us": 1.6},
    {"blocks": 132, "blocks_per_sm": 1, "threads": 256, "us": 1.1}]}))
