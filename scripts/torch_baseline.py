#!/usr/bin/env python3
"""PyTorch on the same GPU as the device check: the modules scripts/export_models.py exports
(same definitions, seeds and inputs), timed eager and under torch.compile (default,
reduce-overhead, max-autotune while the budget lasts). fp32 with TF32 off, as the project's
fp32 kernels compute. Median of the timed runs, CUDA events around each forward pass.

    torch_baseline.py --out torch.json [--sample-only] [--models bert,lstm] [--budget S]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def median(v):
    v = sorted(v)
    n = len(v)
    return 0 if n == 0 else (v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models")
    ap.add_argument("--sample-only", action="store_true")
    ap.add_argument("--budget", type=float, default=300)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--dry-run", action="store_true", help="build the modules on the CPU, time nothing")
    args = ap.parse_args(argv)
    t_start = time.time()
    left = lambda: args.budget - (time.time() - t_start)
    out = {"models": [], "note": ""}

    def save():
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)

    try:
        import torch
        import export_models as em
    except Exception as e:  # no PyTorch on this machine
        out["note"] = "PyTorch baselines skipped: %s" % e
        save()
        return 0
    out["torch"] = torch.__version__
    names = [m.strip() for m in args.models.split(",")] if args.models else em.MODEL_NAMES
    sizes = [False] if args.sample_only else [False, True]
    cuda = torch.cuda.is_available() and not args.dry_run
    out["device"] = torch.cuda.get_device_name(0) if cuda else "none (dry run)" if args.dry_run else "none"
    if not cuda:
        out["note"] = "no CUDA device in PyTorch: modules built, nothing timed"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def build(name, full):
        torch.manual_seed(em.model_seed(name))
        model, shapes, _, _ = em.BUILDERS[name](full)
        em.randomize_norm_stats(model, torch.Generator().manual_seed(em.model_seed(name) + 1))
        model.eval()
        inputs = tuple(torch.randn(s) for s in shapes.values())
        return model, inputs

    def time_fn(fn, inputs):
        with torch.no_grad():
            for _ in range(3):
                fn(*inputs)
            torch.cuda.synchronize()
            ts = []
            for _ in range(args.runs):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn(*inputs)
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b))
        return median(ts)

    # Eager for every model first (cheap), then the compiled modes while the budget lasts.
    entries = []
    for full in sizes:
        for name in names:
            if left() < 10:
                break
            e = {"name": name, "size": "full" if full else "sample"}
            try:
                model, inputs = build(name, full)
                if cuda:
                    model = model.cuda()
                    inputs = tuple(x.cuda() for x in inputs)
                    e["eager_ms"] = time_fn(model, inputs)
                e["_model"], e["_inputs"] = model, inputs
            except Exception as ex:
                e["error"] = "%s: %s" % (type(ex).__name__, ex)
            entries.append(e)
            out["models"] = [{k: v for k, v in x.items() if not k.startswith("_")} for x in entries]
            save()
    if cuda:
        for mode, key in ((None, "compile_ms"), ("reduce-overhead", "reduce_overhead_ms"), ("max-autotune", "max_autotune_ms")):
            for e in entries:
                if "_model" not in e or left() < 60:
                    continue
                try:
                    torch._dynamo.reset()
                    t0 = time.time()
                    fn = torch.compile(e["_model"], mode=mode) if mode else torch.compile(e["_model"])
                    with torch.no_grad():
                        fn(*e["_inputs"])
                    torch.cuda.synchronize()
                    if mode is None:
                        e["compile_s"] = time.time() - t0
                    e[key] = time_fn(fn, e["_inputs"])
                except Exception as ex:
                    e.setdefault("errors", []).append("%s: %s: %s" % (mode or "default", type(ex).__name__, str(ex)[:200]))
                out["models"] = [{k: v for k, v in x.items() if not k.startswith("_")} for x in entries]
                save()
        missing = [m for m in out["models"] if "max_autotune_ms" not in m]
        if missing:
            out["note"] = "modes left empty ran out of the time budget (%d s)" % args.budget
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
