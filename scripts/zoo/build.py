#!/usr/bin/env python3
"""Builds the model zoo: every architecture of catalog.py, offline and with random weights,
exported to ONNX in up to four variants, each in the ONNX backend-test layout.

    <out>/<model>/<variant>/model.onnx
    <out>/<model>/<variant>/test_data_set_0/input_K.pb, output_K.pb
    <out>/<model>/<variant>/zoo.json       what was built, how, and the reference's source

Variants:
    ts      TorchScript-based exporter (torch.onnx.export(dynamo=False)), opset 17 (20 where
            the catalog says an op needs it), float32;
            reference: PyTorch's float32 outputs
    dynamo  dynamo-based exporter (torch.onnx.export(dynamo=True)), opset 18, float32;
            reference: PyTorch's float32 outputs
    fp16    the module in half precision, TorchScript-based exporter; reference: PyTorch's
            float16 outputs (ONNX Runtime's when PyTorch has no CPU half kernel for an op)
    int8    ONNX Runtime's static quantizer (QDQ format, uint8 activations, int8 weights,
            calibrated on random inputs) over the ts export; reference: ONNX Runtime's outputs

Needs torch, torchvision, transformers, onnx, onnxruntime and onnxscript; run it with the
Python that has them:

    PYTHON scripts/zoo/build.py --out DIR [--only a,b] [--variants ts,dynamo] [--ctest]
    PYTHON scripts/zoo/build.py --list
"""

import argparse
import collections
import copy
import io
import contextlib
import json
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.numpy_helper  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import catalog  # noqa: E402

VARIANTS = ["ts", "dynamo", "fp16", "int8"]
TOLERANCE = {"ts": 1e-4, "dynamo": 1e-4, "fp16": 1e-2, "int8": 5e-2}


def seed_of(name):
    # A stable per-model seed (Python's hash() is salted per process).
    return 7000 + sum((i + 1) * ord(c) for i, c in enumerate(name))


def randomize_stats(model, gen):
    """Default normalization parameters (mean 0, variance 1, scale 1, shift 0) would hide a
    consumer's mistake in them; give them random values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
            for pname in ("weight", "bias"):
                p = getattr(m, pname, None)
                is_norm = isinstance(m, (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm)) or (
                    "Norm" in type(m).__name__ and not isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d))
                )
                if is_norm and isinstance(p, nn.Parameter) and p.dim() == 1:
                    if pname == "weight":
                        p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
                    else:
                        p.copy_(torch.randn(p.shape, generator=gen) * 0.1)


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def rel_l2(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    den = np.linalg.norm(b)
    num = np.linalg.norm(a - b)
    return float(num / den) if den > 0 else float(num)


def run_torch(model, inputs):
    with torch.no_grad():
        out = [t.detach().clone() for t in as_tuple(model(*inputs))]
        again = as_tuple(model(*inputs))
    for a, b in zip(out, again):
        if not torch.equal(a, b):
            raise RuntimeError("PyTorch outputs are not deterministic")
    for a in out:
        if a.is_floating_point() and not torch.isfinite(a).all():
            raise RuntimeError("non-finite PyTorch output")
    return out


def run_ort(path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: feeds[n] for n in names})


def write_tensor(path, array, name):
    t = onnx.numpy_helper.from_array(np.ascontiguousarray(array), name=name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def pin_output_shapes(proto, ref):
    """Exporters lose static dimensions they compute through Shape ops; the model is static,
    so state the shapes the reference produced."""
    changed = False
    for o, r in zip(proto.graph.output, ref):
        tt = o.type.tensor_type
        if not tt.HasField("shape") or len(tt.shape.dim) != len(r.shape):
            tt.ClearField("shape")
            for s in r.shape:
                tt.shape.dim.add().dim_value = int(s)
            changed = True
            continue
        for d, size in zip(tt.shape.dim, r.shape):
            if d.HasField("dim_param") or d.dim_value != int(size):
                d.ClearField("dim_param")
                d.dim_value = int(size)
                changed = True
    return changed


def quiet_call(fn, *args, **kwargs):
    """Runs an exporter without its progress lines and warnings; returns (result, log text)."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            result = fn(*args, **kwargs)
    return result, buf.getvalue()


def export(model, args, path, input_names, output_names, dynamo, ts_opset=17):
    kwargs = dict(input_names=input_names, output_names=output_names, dynamo=dynamo)
    if dynamo:
        kwargs.update(opset_version=18, external_data=False, optimize=True)
    else:
        kwargs.update(opset_version=ts_opset, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL)
    with torch.no_grad():
        quiet_call(torch.onnx.export, model, args, path, **kwargs)


def finish_variant(vdir, proto_path, input_names, feeds, output_names, ref, meta):
    proto = onnx.load(proto_path)
    if pin_output_shapes(proto, ref):
        onnx.save(proto, proto_path)
    onnx.checker.check_model(proto_path)
    got_inputs = [i.name for i in proto.graph.input]
    # A graph input the exporter dropped (unused by the graph) is not fed.
    used = [n for n in input_names if n in got_inputs]
    if [o.name for o in proto.graph.output] != output_names:
        raise RuntimeError("exported outputs %s, expected %s" % ([o.name for o in proto.graph.output], output_names))
    data = os.path.join(vdir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for k, n in enumerate(used):
        write_tensor(os.path.join(data, "input_%d.pb" % k), feeds[n], n)
    for k, (n, r) in enumerate(zip(output_names, ref)):
        write_tensor(os.path.join(data, "output_%d.pb" % k), r, n)
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    meta.update(
        nodes=len(proto.graph.node),
        opset=max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
        ops=dict(sorted(ops.items())),
        bytes=os.path.getsize(proto_path),
        inputs={n: list(feeds[n].shape) for n in used},
        outputs={n: list(r.shape) for n, r in zip(output_names, ref)},
    )


def build_model(spec, out, variants, log):
    seed = seed_of(spec.name)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    t0 = time.time()
    model, inputs, output_names = spec.build(gen)
    randomize_stats(model, torch.Generator().manual_seed(seed + 2))
    model.eval()
    input_names = list(inputs)
    args = tuple(inputs.values())
    feeds = {n: t.numpy() for n, t in inputs.items()}
    ref32 = [r.numpy() for r in run_torch(model, args)]
    params = sum(p.numel() for p in model.parameters())
    build_s = time.time() - t0
    results = []
    for variant in variants:
        if variant == "fp16" and not spec.fp16 or variant == "int8" and not spec.int8:
            continue
        vdir = os.path.join(out, spec.name, variant)
        os.makedirs(vdir, exist_ok=True)
        path = os.path.join(vdir, "model.onnx")
        meta = dict(model=spec.name, variant=variant, family=spec.family, source=spec.source,
                    params=params, tolerance=TOLERANCE[variant], note=spec.note, versions=versions())
        t1 = time.time()
        try:
            if variant in ("ts", "dynamo"):
                export(model, args, path, input_names, output_names, dynamo=variant == "dynamo",
                       ts_opset=spec.ts_opset)
                meta["exporter"] = "torch.onnx.export(dynamo=%s)" % (variant == "dynamo")
                meta["reference"] = "PyTorch float32"
                finish_variant(vdir, path, input_names, feeds, output_names, ref32, meta)
                ort_out = run_ort(path, feeds)
                meta["ort_rel_l2"] = max(rel_l2(a, b) for a, b in zip(ort_out, ref32))
            elif variant == "fp16":
                build_fp16(model, args, input_names, output_names, feeds, vdir, path, meta, spec.ts_opset)
            else:
                build_int8(spec, out, input_names, output_names, feeds, vdir, path, meta, seed)
        except Exception as e:  # noqa: BLE001 - recorded and reported, the zoo goes on
            meta["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:300] if str(e) else "")
            meta["traceback"] = traceback.format_exc()[-2000:]
        meta["export_s"] = round(time.time() - t1 + (build_s if variant == variants[0] else 0), 2)
        with open(os.path.join(vdir, "zoo.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        results.append(meta)
        log("%-28s %-6s %s" % (spec.name, variant, describe(meta)))
    return results


def build_fp16(model, args, input_names, output_names, feeds, vdir, path, meta, ts_opset):
    half = copy.deepcopy(model).half()
    hargs = tuple(a.half() if a.is_floating_point() else a for a in args)
    hfeeds = {n: (f.astype(np.float16) if f.dtype == np.float32 else f) for n, f in feeds.items()}
    meta["exporter"] = "torch.onnx.export(dynamo=False) of module.half()"
    export(half, hargs, path, input_names, output_names, dynamo=False, ts_opset=ts_opset)
    try:
        ref = [r.numpy() for r in run_torch(half, hargs)]
        meta["reference"] = "PyTorch float16"
        finish_variant(vdir, path, input_names, hfeeds, output_names, ref, meta)
        try:
            meta["ort_rel_l2"] = max(rel_l2(a, b) for a, b in zip(run_ort(path, hfeeds), ref))
        except Exception as e:  # noqa: BLE001
            meta["ort_error"] = str(e).splitlines()[0][:200]
    except (RuntimeError, NotImplementedError) as e:
        if "not implemented for 'Half'" not in str(e) and "Half" not in str(e):
            raise
        ref = run_ort(path, hfeeds)
        meta["reference"] = "ONNX Runtime (PyTorch: %s)" % str(e).splitlines()[0][:120]
        finish_variant(vdir, path, input_names, hfeeds, output_names, ref, meta)


def build_int8(spec, out, input_names, output_names, feeds, vdir, path, meta, seed):
    from onnxruntime import quantization as q

    src = os.path.join(out, spec.name, "ts", "model.onnx")
    if not os.path.exists(src):
        raise RuntimeError("the int8 variant quantizes the ts export, which is missing")
    rng = np.random.RandomState(seed + 3)

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.items = []
            for _ in range(4):
                item = {}
                for n, f in feeds.items():
                    if f.dtype.kind == "f":
                        item[n] = rng.standard_normal(f.shape).astype(f.dtype)
                    else:
                        item[n] = f
                self.items.append(item)
            self.items.append(dict(feeds))
            self.it = iter(self.items)

        def get_next(self):
            return next(self.it, None)

    prep = os.path.join(vdir, "prep.onnx")
    try:
        quiet_call(q.quant_pre_process, src, prep, skip_symbolic_shape=True)
    except Exception:  # noqa: BLE001 - pre-processing is an optimization only
        prep = src
    quiet_call(q.quantize_static, prep, path, Reader(), quant_format=q.QuantFormat.QDQ,
               activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8, per_channel=False)
    if prep != src and os.path.exists(prep):
        os.remove(prep)
    meta["exporter"] = "onnxruntime.quantization.quantize_static (QDQ) over the ts export"
    ref = run_ort(path, feeds)
    meta["reference"] = "ONNX Runtime int8"
    finish_variant(vdir, path, input_names, feeds, output_names, ref, meta)


def versions():
    """The versions of the packages that built this variant."""
    import onnxruntime
    import torchvision
    import transformers

    out = dict(torch=torch.__version__, torchvision=torchvision.__version__,
               transformers=transformers.__version__, onnx=onnx.__version__,
               onnxruntime=onnxruntime.__version__)
    try:
        import onnxscript

        out["onnxscript"] = onnxscript.__version__
    except ImportError:
        pass
    return out


def describe(meta):
    if "error" in meta:
        return "FAILED " + meta["error"]
    extra = ""
    if "ort_rel_l2" in meta:
        extra = "  ORT vs reference %.1e" % meta["ort_rel_l2"]
    return "%6.2f MB  %5d nodes  %5.1f s%s" % (meta["bytes"] / 1e6, meta["nodes"], meta["export_s"], extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="folder to write the zoo into")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: ts,dynamo,fp16,int8")
    ap.add_argument("--ctest", action="store_true", help="only the models of the CTest subset")
    ap.add_argument("--list", action="store_true", help="list the catalog and exit")
    a = ap.parse_args()

    specs = catalog.SPECS
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in catalog.BY_NAME]
        if unknown:
            ap.error("unknown model(s): %s" % ", ".join(unknown))
        specs = [catalog.BY_NAME[n] for n in names]
    if a.ctest:
        specs = [s for s in specs if s.ctest]
    if a.list:
        for s in specs:
            print("%-28s %-22s %s%s" % (s.name, s.family, s.source, "  [ctest]" if s.ctest else ""))
        return 0
    if not a.out:
        ap.error("--out is required")
    variants = a.variants.split(",")
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        ap.error("unknown variant(s): %s" % ", ".join(bad))
    if "int8" in variants and "ts" not in variants:
        variants.insert(0, "ts")  # int8 quantizes the ts export
    variants = [v for v in VARIANTS if v in variants]
    torch.set_num_threads(2)
    failed = 0
    t0 = time.time()
    for spec in specs:
        try:
            for meta in build_model(spec, a.out, variants, lambda s: print(s, flush=True)):
                failed += "error" in meta
        except Exception as e:  # noqa: BLE001 - the model itself could not be built
            failed += 1
            vdir = os.path.join(a.out, spec.name)
            os.makedirs(vdir, exist_ok=True)
            with open(os.path.join(vdir, "zoo.json"), "w") as f:
                json.dump(dict(model=spec.name, family=spec.family, source=spec.source,
                               error="%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""),
                               traceback=traceback.format_exc()[-2000:]), f, indent=1, sort_keys=True)
            print("%-28s FAILED to build: %s" % (spec.name, e), flush=True)
    print("zoo: %d models, %d failed exports, %.0f s" % (len(specs), failed, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
