#!/usr/bin/env python3
"""The device check's run half (scripts/gpu_check.sh starts it): on a machine with a GPU,
profile every strategy of the sample and paper-size models through souffle-runner, calibrate the
device, time the same PyTorch modules, and write results.md and results.json. With --dry-run it
does everything but the launches (NVRTC compiles, the emulator backend), on any machine."""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["mmoe", "bert", "efficientnet", "resnext", "lstm", "swin"]  # cheapest full-size first
STRATEGIES = ["unfused", "rules", "souffle"]


class Clock:
    def __init__(self, budget):
        self.start = time.time()
        self.deadline = self.start + budget

    def left(self):
        return self.deadline - time.time()

    def elapsed(self):
        return time.time() - self.start


def run(cmd, timeout, env=None, cwd=ROOT):
    """(returncode, stdout, stderr, seconds); returncode None after a timeout."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=max(1, timeout))
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err, time.time() - t0


def nvidia_smi():
    if not shutil.which("nvidia-smi"):
        return {"note": "nvidia-smi not found"}
    q = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,memory.total,temperature.gpu,power.draw"
    rc, out, err, _ = run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], 30)
    if rc != 0:
        return {"note": "nvidia-smi failed: " + (err or out).strip()[:300]}
    vals = [v.strip() for v in out.strip().splitlines()[0].split(",")]
    return dict(zip(q.split(","), vals))


def pip_cuda_libs():
    """Library folders of the CUDA wheels PyTorch brings (NVRTC, CUPTI), as a fallback."""
    dirs = []
    try:
        import importlib.util

        for mod in ("nvidia.cuda_nvrtc", "nvidia.cuda_cupti", "nvidia.cu13"):
            spec = importlib.util.find_spec(mod)
            if spec and spec.submodule_search_locations:
                for loc in spec.submodule_search_locations:
                    lib = os.path.join(loc, "lib")
                    if os.path.isdir(lib):
                        dirs.append(lib)
    except Exception:
        pass
    return dirs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pack", required=True, help="folder with bin/souffle-cli, bin/souffle-runner, lib/")
    ap.add_argument("--out", required=True, help="results folder")
    ap.add_argument("--quick", action="store_true", help="sample models only (a first call)")
    ap.add_argument("--dry-run", action="store_true", help="everything but the launches")
    ap.add_argument("--budget", type=float, default=480, help="seconds for the whole check")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--models", help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch baselines")
    args = ap.parse_args(argv)

    clock = Clock(args.budget)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gpu_check_")
    cli = os.path.join(args.pack, "bin", "souffle-cli")
    runner = os.path.join(args.pack, "bin", "souffle-runner")
    env = dict(os.environ)
    extra = pip_cuda_libs()
    if extra:
        env["LD_LIBRARY_PATH"] = env.get("LD_LIBRARY_PATH", "") + ":" + ":".join(extra)
    models = [m.strip() for m in args.models.split(",")] if args.models else MODELS
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": "dry-run" if args.dry_run else ("quick" if args.quick else "full"),
        "host": os.uname().nodename,
        "cpus": os.cpu_count(),
        "gpu": nvidia_smi() if not args.dry_run else {"note": "dry run: no device used"},
        "steps": [],
        "profiles": [],
        "compiles": [],
        "torch": None,
        "calibration": None,
        "tune": None,
    }

    def step(name, seconds, status, detail=""):
        res["steps"].append({"step": name, "seconds": round(seconds, 1), "status": status, "detail": detail[-2000:]})
        print("gpu_check: %-40s %-10s %6.1fs %s" % (name, status, seconds, detail.strip().splitlines()[-1][:120] if detail.strip() else ""), flush=True)

    rc, out, err, s = run([runner, "--version"], 30, env)
    step("runner starts", s, "ok" if rc == 0 else "failed", out + err)
    if rc != 0:
        return finish(res, args.out, 2)

    # 1. Calibration (launch overhead, grid barrier against grid size, copy bandwidth).
    if not args.dry_run:
        cal = os.path.join(args.out, "calibration.json")
        req = json.dumps({"op": "hello", "id": 1}) + "\n" + json.dumps({"op": "calibrate", "id": 2, "out": cal}) + "\n"
        t0 = time.time()
        try:
            p = subprocess.run([runner, "--backend", "cuda"], input=req, capture_output=True, text=True, env=env,
                               timeout=min(120, max(5, clock.left() - 60)))
            lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip().startswith("{")]
            answer = [l for l in lines if l.get("id") == 2]
            hello = [l for l in lines if l.get("id") == 1]
            res["hello"] = hello[0] if hello else None
            if answer and answer[0].get("ok"):
                res["calibration"] = answer[0]["calibration"]
                step("calibrate", time.time() - t0, "ok")
            else:
                step("calibrate", time.time() - t0, "failed", json.dumps(answer[0] if answer else lines) + p.stderr)
        except subprocess.TimeoutExpired:
            step("calibrate", time.time() - t0, "timeout")

    # 1b. GEMM tiles of the sample BERT chosen by timing the tuner's top candidates on the GPU,
    # beside the tile cost model's choice (compile --tune measure).
    # At most a minute: the models' profiles come first.
    if not args.dry_run and clock.left() > 360:
        bert = os.path.join(ROOT, "sample_models", "bert", "model.onnx")
        rc, out, err, s = run([cli, "compile", bert, "--tune", "measure", "--runner", "'%s'" % runner,
                               "--tune-dir", os.path.join(work, "tune"), "--arch", "sm_90", "--gpu", "h200",
                               "--json", "-q"], min(60, clock.left() - 300), env)
        try:
            res["tune"] = json.loads(out).get("tune")
        except Exception:
            pass
        step("sample bert compile --tune measure", s, "ok" if rc == 0 else ("timeout" if rc is None else "failed"), err)

    # 2. The sample models (committed), then the paper-size ones (exported here with PyTorch).
    sets = [("sample", os.path.join(ROOT, "sample_models"))]
    if not args.quick and not args.dry_run:
        full_dir = os.path.join(work, "full")
        t0 = time.time()
        rc, out, err, s = run([sys.executable, "scripts/export_models.py", "--full", "--out", full_dir,
                               "--only", ",".join(models)], min(240, clock.left() - 120), env)
        step("export paper-size models", s, "ok" if rc == 0 else ("timeout" if rc is None else "failed"), out + err)
        if os.path.isdir(full_dir):
            sets.append(("full", full_dir))

    for size, folder in sets:
        for m in models:
            path = os.path.join(folder, m, "model.onnx")
            if not os.path.exists(path):
                continue
            name = "%s %s" % (size, m)
            if clock.left() < 30:
                step(name, 0, "skipped", "out of time")
                continue
            if args.dry_run:
                for strat in STRATEGIES:
                    rc, out, err, s = run([cli, "compile", path, "--strategy", strat, "--arch", "sm_90", "--gpu", "h200",
                                           "--batch", "16", "--json"], clock.left() - 10, env)
                    entry = {"size": size, "model": m, "strategy": strat, "rc": rc, "seconds": round(s, 1)}
                    try:
                        j = json.loads(out)
                        entry.update(kernels=len(j["kernels"]), errors=j["errors"])
                    except Exception:
                        entry["error"] = (err or out)[-500:]
                    res["compiles"].append(entry)
                    step(name + " " + strat + " compile sm_90", s, "ok" if rc == 0 else "failed", err)
                if m not in ("mmoe", "lstm"):
                    continue
            # Every strategy with grid barriers, then souffle's kernels with per-tile flags; for the
            # LSTM also souffle's kernels in program order and with the weights streamed every
            # step, the forms its waves and weight panels are measured against.
            runs = [("all", "grid", []), ("souffle", "flags", [])]
            if m == "lstm":
                runs += [("souffle", "grid", ["--no-waves"]), ("souffle", "grid", ["--no-weight-panels"])]
                if args.dry_run:
                    runs = runs[2:]  # the dry run profiles MMoE in full, the LSTM's forms only
            for strategy, sync, form in runs:
                label = " ".join(["--sync " + sync] + form)
                if clock.left() < 30:
                    step(name + " profile " + label, 0, "skipped", "out of time")
                    break
                if args.dry_run:
                    cmd = [cli, "profile", path, "--strategy", strategy, "--sync", sync, "--backend", "emulator",
                           "--json", "-q"] + form
                else:
                    cmd = [cli, "profile", path, "--strategy", strategy, "--sync", sync, "--runs", str(args.runs),
                           "--json", "-q", "--runner", runner, "--timeout", "90"] + form
                rc, out, err, s = run(cmd, clock.left() - 10, env)
                try:
                    j = json.loads(out)
                    for r in j["strategies"]:
                        r["size"] = size
                        r["model_name"] = m
                        res["profiles"].append(r)
                    status = "ok" if rc == 0 else "mismatch" if rc == 1 else "failed"
                except Exception:
                    status = "timeout" if rc is None else "failed"
                step(name + " profile" + ("" if (sync, form) == ("grid", []) else " " + label), s, status, err)

    # 3. PyTorch on the same GPU: eager and torch.compile of the same modules.
    if not args.no_torch and clock.left() > 30:
        tj = os.path.join(args.out, "torch.json")
        cmd = [sys.executable, "scripts/torch_baseline.py", "--out", tj, "--budget", str(int(clock.left() - 15)),
               "--models", ",".join(models), "--runs", str(args.runs)]
        if args.quick or args.dry_run:
            cmd.append("--sample-only")
        if args.dry_run:
            cmd.append("--dry-run")
        rc, out, err, s = run(cmd, clock.left() - 5, env)
        step("pytorch baselines", s, "ok" if rc == 0 else ("timeout" if rc is None else "failed"), out + err)
        if os.path.exists(tj):
            with open(tj) as f:
                res["torch"] = json.load(f)
    shutil.rmtree(work, ignore_errors=True)
    bad = [s["step"] for s in res["steps"] if s["status"] in ("failed", "mismatch", "timeout")]
    return finish(res, args.out, 1 if bad else 0)


def fmt(v, digits=1):
    return "" if v is None or v == 0 else ("%.*f" % (digits, v))


def finish(res, out_dir, code):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = ["# Device check, %s (%s)" % (res["date"], res["mode"]), ""]
    g = res.get("gpu", {})
    md.append("GPU: %s, driver %s; clocks seen at the start: SM %s, memory %s (max SM %s, memory %s); host %s, %s CPUs."
              % (g.get("name", "?"), g.get("driver_version", "?"), g.get("clocks.sm", "?"), g.get("clocks.mem", "?"),
                 g.get("clocks.max.sm", "?"), g.get("clocks.max.mem", "?"), res["host"], res["cpus"]))
    c = res.get("calibration")
    if c:
        gb = ", ".join("%d blocks %.2f us" % (s["blocks"], s["us"]) for s in c.get("grid_barrier", []))
        flags = ("a round of per-tile flags (release, one awaited tile) %.2f us, each further tile %.2f us"
                 % (c["flag_round_us"], c.get("flag_tile_us", 0)) if c.get("flag_round_us") else "per-tile flags not measured")
        md += ["", "Calibration: launch %.2f us back to back (%.2f us as graph nodes); one grid barrier: %s; %s; copy %.0f GB/s."
               % (c.get("launch_overhead_us", 0), c.get("graph_launch_us", 0), gb or "not measured", flags,
                  c.get("dram_bandwidth_gbps", 0))]
        for what, key in (("fp32 SIMT", "fp32"), ("fp16 tensor-core", "fp16")):
            rate = c.get("gemm_%s_tflops" % key, 0)
            md.append("GEMM, the project's %s kernel at 4096 cubed: %s." % (
                what, "%.1f TFLOP/s (%s)" % (rate, c.get("gemm_%s_tile" % key, "")) if rate else "not measured"))
        if c.get("gemm_note"):
            md.append("GEMM note: %s." % c["gemm_note"])
    tune = res.get("tune")
    if tune and tune.get("problems"):
        md += ["", "GEMM tiles of the sample BERT timed on %s (compile --tune measure; the tile cost model's order first):" % tune.get("device", "?"), "",
               "| GEMM | timer | candidates, us per launch |", "|---|---|---|"]
        for t in tune["problems"]:
            cands = ", ".join("%s %s" % (c["tile"], "failed" if c["us"] < 0 else "%.2f" % c["us"]) for c in t["candidates"])
            md.append("| %s | %s | %s |" % (t["problem"], t.get("timer", ""), cands))
    if res["profiles"]:
        md += ["", "| model | strategy | kernels | estimated us (spec) | measured us, sum of kernels | end to end us | CUDA graph us | timer | max rel. L2 | verified |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["profiles"]:
            rel = max([o["rel_l2"] for o in r.get("outputs", [])] or [0])
            md.append("| %s %s | %s | %d | %s | %s | %s | %s | %s | %.1e | %s |" % (
                r["size"], r["model_name"],
                r["strategy"] + ("" if r.get("sync", "grid") == "grid" else " (--sync %s)" % r["sync"])
                + ("" if r.get("waves", True) else " (--no-waves)")
                + ("" if r.get("weight_panels", True) else " (--no-weight-panels)"),
                len(r["kernels"]), fmt(r["est_total_us"]),
                fmt(r["kernels_us"]), fmt(r["end_to_end_us"]), fmt(r["graph_us"]),
                r["timer"] if r["gpu_time"] else "emulator (CPU time)", rel,
                "yes" if r["verified"] else ("ERROR: " + r.get("error", "")[:80] if r.get("error") else "no reference")))
    # Per plan: the counted DRAM traffic against the estimate and the time-weighted occupancy;
    # per kernel only the five slowest of each plan (a recurrent model has thousands).
    mb = lambda b: "-" if b is None or b < 0 else "%.2f" % (b / 1e6)
    counted_plans = []
    for r in res["profiles"]:
        ks = [k for k in r.get("kernels", []) if k.get("dram_read_bytes", -1) >= 0 and k.get("dram_write_bytes", -1) >= 0]
        if ks:
            counted_plans.append((r, ks))
    if counted_plans:
        md += ["", "Hardware counters (one run under CUPTI's range profiler), per plan:", "",
               "| model | strategy | kernels counted | est. DRAM MB | measured DRAM MB | achieved occupancy (time-weighted) |",
               "|---|---|---|---|---|---|"]
        for r, ks in counted_plans:
            occ = [(k["time_us"]["median"], k["achieved_occupancy"]) for k in ks if k.get("achieved_occupancy", -1) >= 0]
            w = sum(t for t, _ in occ)
            md.append("| %s %s | %s | %d of %d | %s | %s | %s |" % (
                r["size"], r["model_name"], r["strategy"], len(ks), len(r["kernels"]),
                # A partition split into launches gives each its estimate: count it once.
                mb(sum({k.get("partition", k["name"]): k.get("est_dram_bytes", 0) for k in ks}.values())),
                mb(sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in ks)),
                "%.0f%%" % (100 * sum(t * o for t, o in occ) / w) if w > 0 else "-"))
        md += ["", "The five slowest kernels of each counted plan (a split partition's launches each "
               "show its whole estimate):", "",
               "| model | strategy | kernel | us | est. DRAM MB | DRAM read MB | written MB | achieved occupancy |",
               "|---|---|---|---|---|---|---|---|"]
        for r, ks in counted_plans:
            for k in sorted(ks, key=lambda k: -k["time_us"]["median"])[:5]:
                occ = k.get("achieved_occupancy", -1)
                md.append("| %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    r["size"], r["model_name"], r["strategy"], k["name"], fmt(k["time_us"]["median"]),
                    mb(k.get("est_dram_bytes", 0)), mb(k.get("dram_read_bytes")), mb(k.get("dram_write_bytes")),
                    "-" if occ < 0 else "%.0f%%" % (100 * occ)))
    notes = sorted({r.get("counters_note", "") for r in res["profiles"] if r.get("gpu_time")} - {""})
    for n in notes:
        md += ["", "Counters: " + n]
    if res["compiles"]:
        md += ["", "| model | strategy | kernels | NVRTC errors | seconds |", "|---|---|---|---|---|"]
        for e in res["compiles"]:
            md.append("| %s %s | %s | %s | %s | %s |" % (e["size"], e["model"], e["strategy"], e.get("kernels", "?"),
                                                         e.get("errors", e.get("error", "?")), e["seconds"]))
    t = res.get("torch")
    if t and t.get("models"):
        md += ["", "PyTorch %s on the same GPU (fp32, TF32 off; median of the timed runs, CUDA events):" % t.get("torch", "?"), "",
               "| model | eager ms | torch.compile ms | reduce-overhead ms | max-autotune ms | compile s |", "|---|---|---|---|---|---|"]
        for m in t["models"]:
            md.append("| %s %s | %s | %s | %s | %s | %s |" % (m["size"], m["name"], fmt(m.get("eager_ms"), 3),
                      fmt(m.get("compile_ms"), 3), fmt(m.get("reduce_overhead_ms"), 3), fmt(m.get("max_autotune_ms"), 3),
                      fmt(m.get("compile_s"), 1)))
        if t.get("note"):
            md += ["", t["note"]]
    md += ["", "| step | status | seconds |", "|---|---|---|"]
    for s in res["steps"]:
        md.append("| %s | %s | %s |" % (s["step"], s["status"], s["seconds"]))
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("gpu_check: wrote %s/results.md and results.json" % out_dir, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
