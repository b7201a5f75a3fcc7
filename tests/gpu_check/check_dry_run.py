#!/usr/bin/env python3
"""The device check's dry run from a moved pack, on the recorded answers of
tests/gpu_check/answers/ (an H100 PCIe's hello, a profile with a NaN output, a refused counter
run and a failed graph capture, a calibration cut off mid-answer), with the pack's library
folder exported as the old script did: it must run to the end, write every row, render the
NaN, plan for the device's own spec, and keep the pack out of its Python steps.

    check_dry_run.py PACK OUT
"""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(pack, out):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(pack, "lib"))
    p = subprocess.run([os.path.join(ROOT, "scripts", "gpu_check.sh"), "--dry-run", "--pack", pack,
                        "--models", "mmoe,bert", "--out", out], env=env, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr[-3000:])
    fail = []
    if p.returncode not in (0, 1):
        fail.append("the dry run exited %d" % p.returncode)
    if "Traceback" in p.stderr or "Traceback" in p.stdout:
        fail.append("a traceback ended or interrupted the run")
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    with open(os.path.join(out, "results.md")) as f:
        md = f.read()
    steps = {s["step"]: s for s in res["steps"]}

    def expect(cond, what):
        if not cond:
            fail.append(what)

    expect(steps.get("runner starts", {}).get("status") == "ok", "the moved pack's runner starts")
    expect(steps.get("runner hello", {}).get("status") == "ok", "hello replayed")
    expect(res["spec"] and res["spec"].get("sm_count") == 114, "planned for the device's 114 SMs: %s" % res["spec"])
    expect(os.path.exists(os.path.join(out, "gpu_spec.json")), "the device's spec written for --gpu")
    expect(res["compiles"] and all(c.get("gpu") == "H100 PCIe" and c.get("rc") == 0 for c in res["compiles"]),
           "every compile for the device's spec: %s" % res["compiles"])
    pe = res.get("python_env") or {}
    expect(pe and not pe.get("names_pack") and not pe.get("loaded_from_pack"),
           "the Python steps' environment names no packed folder: %s" % pe)
    expect(steps.get("pytorch imports (the check's environment)", {}).get("status") in ("ok", "absent"),
           "PyTorch imports or is absent")
    nan = steps.get("sample mmoe profile", {})
    expect(nan.get("status") == "mismatch" and "an output is NaN" in nan.get("detail", ""), "NaN profile row: %s" % nan)
    expect("| NaN | no: an output is NaN |" in md, "the NaN rendered in results.md")
    expect("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in md, "the refused counter run named")
    expect("CUDA graph: " in md and "cuGraphInstantiate" in md, "the failed graph capture named")
    cal = steps.get("calibrate", {})
    expect(cal.get("status") == "failed" and "is not JSON" in cal.get("detail", ""), "calibrate's cut answer: %s" % cal)
    emu = steps.get("sample mmoe profile (emulator, CPU time)", {})
    expect(emu.get("status") == "ok", "the emulator profile from the moved pack: %s" % emu)
    expect(steps.get("sample bert profile", {}).get("status") == "skipped", "no recorded bert answer: skipped")
    # The timeline: the device's replayed answer and the emulator's for real, each a per-stage CSV
    # and a row of grid-barrier waits; no GPU document here to calibrate from.
    tl = steps.get("sample mmoe souffle --timeline: records, overhead", {})
    expect(tl.get("status") == "ok" and "instrumented 13.10 us vs plain" in tl.get("detail", ""),
           "the replayed timeline with its overhead: %s" % tl)
    etl = steps.get("sample mmoe souffle --timeline (emulator, emulated clock)", {})
    expect(etl.get("status") == "ok" and "emulated us" in etl.get("detail", ""), "the emulator's timeline: %s" % etl)
    expect([t.get("gpu_time") for t in res.get("timelines", [])] == [True, False],
           "a GPU timeline and an emulated one: %s" % res.get("timelines"))
    for f in ("sample-mmoe.stages.csv", "grid_barrier_waits.csv"):
        expect(os.path.exists(os.path.join(out, "timeline", f)), "timeline/%s written" % f)
    expect(os.path.exists(os.path.join(out, "timeline", "sample-mmoe", "souffle.timeline.json")),
           "the emulator's profile --timeline wrote its document into the results")
    expect("| sample mmoe | emulated (cost model) | kernel0 |" in md, "the emulated timeline in results.md")
    expect(steps.get("calibrate --from-timeline", {}).get("status") == "skipped",
           "no GPU timeline document to calibrate from: skipped")
    expect(not any("the check itself failed" in s.get("detail", "") for s in res["steps"]),
           "no step failed inside the check")
    expect(md.rstrip().endswith("|") and "| pytorch baselines |" in md, "results.md written to the last step")
    # --quick: the steps that prove the basics (the timeline among them), and nothing else, well
    # within two minutes.
    quick = out + "_quick"
    t0 = time.time()
    q = subprocess.run([os.path.join(ROOT, "scripts", "gpu_check.sh"), "--dry-run", "--quick", "--pack", pack,
                        "--out", quick], env=env, capture_output=True, text=True)
    with open(os.path.join(quick, "results.json")) as f:
        qres = json.load(f)
    rows = [(s["step"], s["status"]) for s in qres["steps"]]
    expect(q.returncode == 0 and time.time() - t0 < 120, "--quick exits 0 within two minutes: %d" % q.returncode)
    expect([r[0] for r in rows] == ["runner starts", "runner hello", "pytorch imports (the check's environment)",
                                    "sample mmoe souffle: load, run, verify, time",
                                    "sample mmoe souffle --timeline: records, overhead"], "--quick's steps: %s" % rows)
    expect(all(st in ("ok", "absent") for _, st in rows), "--quick's steps pass: %s" % rows)
    for f in fail:
        print("FAIL: " + f)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
