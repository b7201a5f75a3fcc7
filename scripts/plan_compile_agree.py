#!/usr/bin/env python3
"""Checks that what `plan --json` reports is what `compile --json` builds, per model and strategy:
kernels, launches, grid barriers and DRAM bytes (issue: the plan reports the kernels built).

    scripts/plan_compile_agree.py [--cli build/app/cli/souffle-cli] [--strategies souffle,rules]
                                  [--arch sm_80] [--batch 64] MODEL.onnx...

Prints one row per model and strategy with both sides and the times; exits 1 if any differs,
2 if a command fails.
"""
import argparse
import json
import subprocess
import sys
import time


def run_json(cmd):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    out = p.stdout
    return json.loads(out[out.index("{"):]), time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--cli", default="build/app/cli/souffle-cli")
    ap.add_argument("--strategies", default="souffle,rules")
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    fields = [("kernels", lambda p: p["kernels"], lambda c: c["plan"]["kernels"]),
              ("launches", lambda p: p["launches"], lambda c: c["launches"]),
              ("grid barriers", lambda p: p["grid_syncs"], lambda c: c["grid_barriers"]),
              ("DRAM bytes", lambda p: p["dram_bytes"], lambda c: c["plan"]["dram_bytes"])]
    print("| model | strategy | " + " | ".join(f"{n} (plan / compile)" for n, _, _ in fields) +
          " | plan s | compile s | agree |")
    print("|---|---|" + "---|" * (len(fields) + 3))
    bad = 0
    for m in a.models:
        for s in a.strategies.split(","):
            try:
                pj, pt = run_json([a.cli, "plan", m, "--json", "--strategy", s])
                cj, ct = run_json([a.cli, "compile", m, "--json", "--strategy", s, "--arch", a.arch,
                                   "--batch", str(a.batch)])
            except (RuntimeError, ValueError) as e:
                print(f"| {m} | {s} | error: {e} |")
                return 2
            cells, ok = [], True
            for _, fp, fc in fields:
                x, y = fp(pj), fc(cj)
                ok = ok and x == y
                cells.append(f"{x} / {y}")
            bad += not ok
            print(f"| {m} | {s} | " + " | ".join(cells) + f" | {pt:.1f} | {ct:.1f} | {'yes' if ok else 'NO'} |",
                  flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
