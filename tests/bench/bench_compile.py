#!/usr/bin/env python3
"""Compile and plan time of one model, each run a fresh souffle-cli process: `compile` with an
empty cache folder (cold: every partition built to be priced, every kernel compiled), the same
again with the folder it filled (warm: prices and compiled kernels from the cache), and `plan`
cold (`--no-cache`: every partition built) and warm (a folder one plan filled); beside them, when the onnxruntime package imports, ONNX Runtime's InferenceSession creation of
the same file. Medians (min-max) of --runs runs, the machine's cores and load average before and
after, and from the last cold run its kernels, distinct programs and NVRTC time.

    bench_compile.py CLI MODEL.onnx [--runs 3] [--strategy souffle] [--gpu h200] [--arch sm_90]
                     [--plan-only]

With --plan-only, only `plan` and the session creation (the side-by-side figure of the plan goal),
each run's per-step times (import, partition, decisions) from `plan --json` beside the wall time.
The cache folder is always a fresh temporary one: the user's own is never read or written.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return dt, r.stdout


def fmt(xs):
    return f"{statistics.median(xs):7.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--strategy", default="souffle")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--plan-only", action="store_true", help="no compile runs: plan and ONNX Runtime only")
    a = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {load()}, "
          f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print(f"model {a.model}, strategy {a.strategy}, gpu {a.gpu}, arch {a.arch}, {a.runs} runs each")
    compile_cmd = [a.cli, "compile", a.model, "--strategy", a.strategy, "--gpu", a.gpu, "--arch", a.arch,
                   "--json", "-q"]
    plan_cmd = [a.cli, "plan", a.model, "--strategy", a.strategy, "--gpu", a.gpu, "--json"]
    cold, warm, plan, plan_warm, facts = [], [], [], [], {}
    steps = {}

    def plans():
        """One cold plan (no cache) and one warm (from a folder a first plan filled)."""
        folder = tempfile.mkdtemp(prefix="souffle-bench-cache-")
        env = dict(os.environ, SOUFFLE_CACHE_DIR=folder)
        try:
            dt, out = timed(plan_cmd + ["--no-cache"], env)
            plan.append(dt)
            for p in json.loads(out).get("passes", []):
                steps.setdefault(p["name"], []).append(p["ms"] / 1000)
            timed(plan_cmd, env)  # fills the folder
            plan_warm.append(timed(plan_cmd, env)[0])
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    for _ in range(a.runs if not a.plan_only else 0):
        folder = tempfile.mkdtemp(prefix="souffle-bench-cache-")
        env = dict(os.environ, SOUFFLE_CACHE_DIR=folder)
        try:
            dt, out = timed(compile_cmd, env)
            cold.append(dt)
            j = json.loads(out)
            facts = dict(kernels=len(j["kernels"]), programs=j.get("programs"), nvrtc_ms=j["compile_ms"],
                         build_ms=j["build_ms"], load_ms=j["load_ms"])
            dt, out = timed(compile_cmd, env)
            warm.append(dt)
            facts["warm_from_cache"] = json.loads(out)["cache"].get("programs_from_cache")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    for _ in range(a.runs):
        plans()
    if not a.plan_only:
        print(f"compile, cold cache: {fmt(cold)}   last: {facts['kernels']} kernels, {facts['programs']} "
              f"distinct programs, NVRTC {facts['nvrtc_ms'] / 1000:.2f} s, build {facts['build_ms'] / 1000:.2f} s, "
              f"load {facts['load_ms'] / 1000:.2f} s")
        print(f"compile, warm cache: {fmt(warm)}   ({facts['warm_from_cache']} programs from the cache)")
    print(f"plan, cold (--no-cache): {fmt(plan)}")
    for name in ("import", "partition", "decisions"):
        if name in steps:
            xs = steps[name]
            print(f"  its {name + ':':<16}{statistics.median(xs) * 1000:7.1f} ms ({min(xs) * 1000:.1f}-"
                  f"{max(xs) * 1000:.1f})")
    print(f"plan, warm (prices from the cache): {fmt(plan_warm)}")
    try:
        import onnxruntime as ort

        ses = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
            ses.append(time.perf_counter() - t0)
        print(f"onnxruntime {ort.__version__} session creation: {fmt(ses)}; souffle plan / ORT = "
              f"{statistics.median(plan) / statistics.median(ses):.2f}x cold, "
              f"{statistics.median(plan_warm) / statistics.median(ses):.2f}x warm")
    except ImportError:
        print("onnxruntime: not installed (pip install onnxruntime), no side-by-side figure")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
