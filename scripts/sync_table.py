#!/usr/bin/env python3
"""Grid barriers before and after per-tile flags, per model: `plan --json` under each sync mode.

    scripts/sync_table.py [--cli build/app/cli/souffle-cli] [--strategy souffle] [--gpu a100]
                          [--modes grid,auto,flags] MODEL.onnx...

For each model and mode: grid barriers, flag boundaries, the estimated time of the plan (cost
model v2 on the GPU spec: an estimate, not a measurement), and how many grid barriers remain for
want of a proof (reason "unproven": the dependence could not be bounded) as opposed to those that
name a cross-block dependency. Prints a Markdown table; exits 2 if a command fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter


def plan_json(cli, model, strategy, gpu, mode):
    t = time.monotonic()
    p = subprocess.run([cli, "plan", model, "--json", "--strategy", strategy, "--gpu", gpu,
                        "--sync", mode], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"plan {model} --sync {mode} exited {p.returncode}: "
                           f"{p.stderr.strip()[-400:]}")
    out = p.stdout
    return json.loads(out[out.index("{"):]), time.monotonic() - t


def summary(j):
    kinds, grid_reasons = Counter(), Counter()
    for k in j.get("partitions", []):
        for b in k.get("boundaries", []):
            kinds[b["kind"]] += 1
            if b["kind"] == "grid":
                grid_reasons[b["reason"]["kind"]] += 1
    return kinds, grid_reasons


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--cli", default="build/app/cli/souffle-cli")
    ap.add_argument("--strategy", default="souffle")
    ap.add_argument("--gpu", default="a100")
    ap.add_argument("--modes", default="grid,auto,flags")
    a = ap.parse_args()
    modes = a.modes.split(",")
    print("| model | " + " | ".join(f"{m}: grid barriers / flag boundaries / est. µs" for m in modes) +
          " | grid barriers for want of a proof (" + modes[0] + ") | plan s (" + ",".join(modes) +
          ") |")
    print("|---|" + "---|" * (len(modes) + 2))
    failed = False
    for model in a.models:
        name = os.path.basename(os.path.dirname(os.path.abspath(model))) or model
        cells, times, unproven = [], [], "?"
        for i, mode in enumerate(modes):
            try:
                j, t = plan_json(a.cli, model, a.strategy, a.gpu, mode)
            except (RuntimeError, ValueError) as e:
                print(f"error: {e}", file=sys.stderr)
                cells.append("error")
                failed = True
                continue
            kinds, reasons = summary(j)
            cells.append(f"{j['grid_syncs']} / {kinds['flags']} / {j['est_time_us']:.1f}")
            times.append(f"{t:.1f}")
            if i == 0:
                unproven = str(reasons["unproven"])
        print(f"| {name} | " + " | ".join(cells) + f" | {unproven} | {' / '.join(times)} |")
        sys.stdout.flush()
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
