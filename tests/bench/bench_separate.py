#!/usr/bin/env python3
"""Whole-program NVRTC against separate compilation (`compile --separate whole|objects|lto`) of
one model: each mode a fresh souffle-cli process with --no-cache, its wall time (median of --runs),
and for every kernel that calls stage functions its registers, spill bytes and stack per thread
under each mode, from `compile --json` (ptxas' lines, or the linked CUBIN). The machine's cores
and load average are printed before and after.

    bench_separate.py CLI MODEL.onnx [--gpu h200] [--arch sm_90] [--modes whole,objects]
                      [--runs 1] [--strategy souffle]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cli")
    ap.add_argument("model")
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--modes", default="whole,objects")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--strategy", default="souffle")
    a = ap.parse_args()
    modes = a.modes.split(",")
    print(f"machine: {os.cpu_count()} cores, load average {load()}, "
          f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print(f"model {a.model}, strategy {a.strategy}, gpu {a.gpu}, arch {a.arch}, no cache")
    walls, kernels, linked = {}, {}, {}
    for mode in modes:
        cmd = [a.cli, "compile", a.model, "--strategy", a.strategy, "--gpu", a.gpu, "--arch",
               a.arch, "--separate", mode, "--no-cache", "--json", "-q"]
        walls[mode] = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            walls[mode].append(time.perf_counter() - t0)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
        j = json.loads(r.stdout)
        linked[mode] = j["separate"]["linked_kernels"]
        for k in j["kernels"]:
            for pa in k.get("per_arch", []):
                kernels.setdefault((k["name"], k["stages"]), {})[mode] = pa
    for mode in modes:
        print(f"{mode:8s} {statistics.median(walls[mode]):7.2f} s "
              f"({min(walls[mode]):.2f}-{max(walls[mode]):.2f}), "
              f"{linked[mode]} kernels linked from separate programs")
    print("kernel (stages): " + " | ".join(f"{m}: registers / spill B / stack B" for m in modes))
    for (name, stages), per in kernels.items():
        if stages < 2 or all(m not in per for m in modes):
            continue
        cells = []
        for m in modes:
            pa = per.get(m, {})
            cells.append(f"{pa.get('registers', '-')} / {pa.get('spills', '-')} / "
                         f"{pa.get('stack', '-')}")
        if len(set(cells)) > 1 or stages >= 8:
            print(f"  {name} ({stages}): " + " | ".join(cells))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
