#!/usr/bin/env python3
"""Records tests/data/onnxruntime_profile_bert_sample_cpu.json: ONNX Runtime's own profile
(SessionOptions.enable_profiling) of the sample BERT on the CPU provider, with its default graph
optimizations (so some of its node names are the fused ones its optimizer makes), two runs.
Run with a Python that has numpy and onnxruntime:
  VENV/bin/python tests/data/record_onnxruntime_profile.py
"""
import os
import shutil

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "sample_models", "bert", "model.onnx")
OUT = os.path.join(HERE, "onnxruntime_profile_bert_sample_cpu.json")

so = ort.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = os.path.join(HERE, "ort_profile_tmp")
so.intra_op_num_threads = 1
sess = ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).standard_normal((1, 64, 128)).astype(np.float32)
for _ in range(2):
    sess.run(None, {sess.get_inputs()[0].name: x})
shutil.move(sess.end_profiling(), OUT)
