#!/usr/bin/env python3
"""Runs every model of a zoo (scripts/zoo/build.py's layout) through Souffle Explorer as one
sweep (`souffle-cli sweep`, docs/python.md): a task per model variant x strategy, on this
machine's cores or a Dask cluster, each task in a process of its own under CPU-time limits.
Writes one table: the result and CPU time of each step, failures named by operator and node.

Steps, for each <model>/<variant>/model.onnx (the zoo's names for the sweep's steps):
    import    load: import, shape inference, folding, lowering       (the sweep's "load")
    te        the TE program in the reference interpreter vs the reference data ("te", run in
              the first strategy's task)
    plan      the plan under each strategy S (unfused, rules, souffle-paper, souffle)   ("plan")
    kernels   each plan's loop-IR kernels in the CPU emulator, --kernel-strategies   ("verify")
    nvrtc     the kernels through NVRTC for --archs, --nvrtc-strategies           ("compile")

Each step has a CPU-time limit (user + system, every thread: --timeout for import and plans,
--kernel-budget for te and kernels, --compile-timeout for NVRTC); a task past one is stopped
there and the sweep reports it, so a kernel step past its budget shows as skipped (emulator
budget), others as failed (timeout). A step after one that failed in the same task is skipped.
The runner itself needs only the standard library and souffle-cli (which starts the sweep with
the interpreter the souffle package was built for).

    run.py --zoo DIR --cli build/app/cli/souffle-cli [--md docs/zoo.md] [--json FILE]
           [--only a,b] [--variants ts,dynamo] [--strategies souffle] [--kernel-budget 300]
           [--light-variants dynamo,fp16] [--no-kernels] [--no-nvrtc] [--expect FILE [--update-expect]]
           [--workers N | --scheduler tcp://HOST:8786] [--manifest FILE] [--sweep-out DIR]

--manifest FILE writes the sweep's manifest (and runs it unless --manifest-only); --sweep-out
keeps the sweep's own sweep.json, sweep.csv and sweep.html.

With --expect FILE the run is a check: each step's status (ok, fail, skip) must be the one the
file records, else exit 1 naming the differences; --update-expect rewrites the file instead.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

STRATEGIES = ["unfused", "rules", "souffle-paper", "souffle"]
# Operators issue 14 adds (the int8 QDQ family, TopK, GridSample, RoiAlign, DFT/STFT and the
# window functions, control flow, ...): a model that needs one waits for it.
ISSUE_14_OPS = {
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearMatMul", "QLinearConv",
    "MatMulInteger", "ConvInteger", "TopK", "GridSample", "RoiAlign", "DFT", "STFT", "HannWindow",
    "HammingWindow", "BlackmanWindow", "MelWeightMatrix", "ReverseSequence", "Det", "If", "Loop",
    "Scan", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "SequenceConstruct",
    "SequenceAt", "SequenceInsert", "SequenceEmpty", "SplitToSequence", "ConcatFromSequence",
}
# "file": a corpus file (scripts/zoo/corpus.py), the model folder itself holds model.onnx.
VARIANT_ORDER = ["ts", "dynamo", "fp16", "int8", "file"]
# Element-wise tolerances (souffle-cli verify --rtol/--atol) where the reference is not an fp32
# computation: PyTorch's float16 run rounds differently (several fp16 steps on logits of a few
# units), ONNX Runtime's QDQ run may round a requantization the other way (one quantization step).
# Elsewhere verify's defaults by precision apply. A zoo.json "rtol"/"atol" overrides.
VARIANT_TOLERANCE = {"fp16": {"rtol": 1e-2, "atol": 2e-2}, "int8": {"rtol": 5e-2, "atol": 5e-2}}


def find_models(zoo, only, variants):
    """(model, variant, folder) for every model.onnx under zoo/<model>/<variant>/, in catalog
    order when a zoo.json gives none (sorted by name then)."""
    found = []
    for model in sorted(os.listdir(zoo)):
        mdir = os.path.join(zoo, model)
        if not os.path.isdir(mdir) or (only and model not in only):
            continue
        if os.path.isfile(os.path.join(mdir, "model.onnx")):
            if not variants or "file" in variants:
                found.append((model, "file", mdir))
            continue
        for variant in VARIANT_ORDER:
            vdir = os.path.join(mdir, variant)
            if variants and variant not in variants:
                continue
            if os.path.isfile(os.path.join(vdir, "model.onnx")) or os.path.isfile(os.path.join(vdir, "zoo.json")):
                found.append((model, variant, vdir))
    return found


def read_meta(vdir):
    path = os.path.join(vdir, "zoo.json")
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    return {}


class Step:
    def __init__(self, name, status, seconds=None, detail="", data=None, cpu=None):
        self.name = name
        self.status = status  # ok, fail, skip
        self.seconds = seconds
        self.detail = detail
        self.data = data or {}
        self.cpu = cpu

    def json(self):
        j = dict(step=self.name, status=self.status, detail=self.detail)
        if self.seconds is not None:
            j["seconds"] = round(self.seconds, 2)
        if self.cpu is not None:
            j["cpu_s"] = round(self.cpu, 2)
        j.update(self.data)
        return j


# ----------------------------------------------------------------------------------------------
# The sweep: its manifest, and its rows read back as the zoo's steps
# ----------------------------------------------------------------------------------------------


def load_options(args):
    """zoo.json's command-line arguments (--dim NAME=V, --shape NAME=D0,D1, --bind NAME=V) as
    souffle.load's dims, shapes and bind."""
    dims, shapes, bind = {}, {}, {}
    for flag, value in zip(args[::2], args[1::2]):
        name, _, v = value.partition("=")
        if flag == "--dim":
            dims[name] = int(v)
        elif flag == "--shape":
            shapes[name] = [int(d) for d in v.split(",")]
        elif flag == "--bind":
            bind[name] = v  # the CLI's text: numbers or a .pb file
        else:
            raise ValueError("zoo.json args: unknown flag %s" % flag)
    return dims, shapes, bind


def model_entry(model, variant, vdir, meta, a):
    """The sweep's entry for one variant: the file, its load options, its tolerances, and the
    strategies its kernel and NVRTC steps run under."""
    entry = {"path": os.path.abspath(os.path.join(vdir, "model.onnx")),
             "name": "%s/%s" % (model, variant)}
    dims, shapes, bind = load_options(meta.get("args", []))
    for key, v in (("dims", dims), ("shapes", shapes), ("bind", bind)):
        if v:
            entry[key] = v
    tol = dict(VARIANT_TOLERANCE.get(variant, {}))
    tol.update({k: float(meta[k]) for k in ("rtol", "atol") if k in meta})
    entry.update(tol)
    if variant in a.light_variants:
        entry["step_strategies"] = {
            "verify": [s for s in a.kernel_strategies if s == "souffle"],
            "compile": [s for s in a.nvrtc_strategies if s == "souffle"]}
    return entry


def make_manifest(entries, a):
    steps = ["plan", "te"]
    if not a.no_nvrtc:
        steps.append("compile")
    if not a.no_kernels:
        steps.append("verify")
    m = {"models": entries, "strategies": a.strategies, "gpus": ["a100"], "steps": steps,
         "archs": a.archs.split(","), "retries": 1,
         "step_strategies": {"te": a.strategies[:1], "verify": a.kernel_strategies,
                             "compile": a.nvrtc_strategies},
         "step_cpu_timeout": {"load": a.timeout, "plan": a.timeout, "te": a.kernel_budget,
                              "verify": a.kernel_budget, "compile": a.compile_timeout}}
    if a.workers:
        m["workers"] = a.workers
    return m


def run_sweep(manifest_path, out, a):
    """souffle-cli sweep MANIFEST --out OUT; its sweep.json."""
    cmd = [a.cli, "sweep", manifest_path, "--out", out]
    if a.scheduler:
        cmd += ["--scheduler", a.scheduler]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=None if not a.quiet else subprocess.DEVNULL)
    if p.returncode not in (0, 1):
        sys.exit("error: souffle-cli sweep %s failed (exit %d)" % (manifest_path, p.returncode))
    with open(os.path.join(out, "sweep.json")) as f:
        return json.load(f)


def short_error(msg, model_path):
    msg = msg.replace(model_path + ": ", "").replace(model_path, "MODEL")
    msg = re.sub(r"^(internal )?error: ", lambda m: "internal error: " if m.group(1) else "", msg)
    return msg[:400]


def unsupported_ops(error):
    """{op: [nodes]} from the loader's "unsupported ops: Op (N nodes: a, b, c, ...), ..."."""
    found = {}
    for op, n, nodes in re.findall(r"(\w+) \((\d+) nodes?: ([^)]*)\)", error.split("unsupported ops:", 1)[-1]
                                   if "unsupported ops:" in error else ""):
        names = [x for x in nodes.split(", ") if x != "..."]
        found[op] = names + ["..."] * (int(n) - len(names))
    return found


def timed_out(row, step):
    return row.get("status") == "timeout" and row.get("failed_step") == step


def limit_detail(row):
    m = re.search(r"CPU limit of ([0-9.]+) s", row.get("error", ""))
    return "timeout: over %s CPU s" % m.group(1) if m else "timeout: " + row.get("error", "")


def variant_steps(rows, entry, a):
    """The zoo's steps of one variant from its sweep rows (one per strategy)."""
    path = entry["path"]
    te_strategy = a.strategies[0]
    by = {r["strategy"]: r for r in rows}
    first = rows[0]
    steps = []
    if first.get("failed_step") == "load":
        if first["status"] == "timeout":
            steps.append(Step("import", "fail", None, limit_detail(first), {"timeout": True}))
            return steps
        detail = short_error(first.get("error", ""), path)
        data = {}
        unsup = unsupported_ops(detail)
        if unsup:
            data["unsupported"] = unsup
            detail = "unsupported: " + "; ".join(
                "%s (%d: %s)" % (op, len(nodes), ", ".join(n for n in nodes[:3] if n != "...") +
                                 (", ..." if len(nodes) > 3 else ""))
                for op, nodes in sorted(unsup.items()))
        steps.append(Step("import", "fail", first.get("load_s"), detail, data,
                          cpu=first.get("load_cpu_s")))
        return steps
    steps.append(Step("import", "ok", first.get("load_s"), "%d nodes -> %d TEs" % (
        first["onnx_nodes"], first["tes"]), {"onnx_nodes": first["onnx_nodes"], "tes": first["tes"],
                                            "load_ms": round(1000 * first.get("load_s", 0), 1)},
        cpu=first.get("load_cpu_s")))

    def reached(r, step):
        """Whether `step` ran in row r, or why not."""
        order = ["plan", "compile", "te", "verify"]
        fs = r.get("failed_step")
        if not fs or r.get("status") == "ok":
            return None
        if order.index(fs) < order.index(step):
            return "no plan" if fs == "plan" else (
                "TE level failed" if fs == "te" else "not run: %s %s" % (fs, "timed out" if r["status"] == "timeout" else "failed"))
        return None

    te_row = by.get(te_strategy)
    if te_row is not None:
        if "te_verified" in te_row:
            data = {"max_rel_l2": te_row.get("te_max_rel_l2"), "max_abs": te_row.get("te_max_abs"),
                    "mismatches": te_row.get("te_mismatches")}
            ok = te_row["te_verified"]
            detail = "rel. L2 %.1e" % (te_row.get("te_max_rel_l2") or 0) if ok else short_error(
                te_row.get("error", ""), path)
            steps.append(Step("te", "ok" if ok else "fail", te_row.get("te_s"), detail, data,
                              cpu=te_row.get("te_cpu_s")))
        elif timed_out(te_row, "te"):
            steps.append(Step("te", "fail", None, limit_detail(te_row), {"timeout": True}))
        elif te_row.get("failed_step") == "te":
            steps.append(Step("te", "fail", te_row.get("te_s"), short_error(te_row.get("error", ""), path)))
        else:
            steps.append(Step("te", "skip", None, reached(te_row, "te") or "not run"))
    for s in a.strategies:
        r = by[s]
        if "kernels" in r:
            steps.append(Step("plan " + s, "ok", r.get("plan_s"), "%d kernels, %d grid syncs, est. %.1f µs" % (
                r["kernels"], r["grid_syncs"], r["est_time_us"]),
                {"kernels": r["kernels"], "grid_syncs": r["grid_syncs"], "est_time_us": r["est_time_us"]},
                cpu=r.get("plan_cpu_s")))
        elif timed_out(r, "plan"):
            steps.append(Step("plan " + s, "fail", None, limit_detail(r), {"timeout": True}))
        else:
            steps.append(Step("plan " + s, "fail", r.get("plan_s"), short_error(r.get("error", ""), path)))
    only = entry.get("step_strategies", {})
    for s in [] if a.no_kernels else only.get("verify", a.kernel_strategies):
        r = by[s]
        if "verified" in r:
            data = {"max_rel_l2": r.get("max_rel_l2"), "max_abs": r.get("max_abs"),
                    "mismatches": r.get("mismatches")}
            ok = r["verified"]
            steps.append(Step("kernels " + s, "ok" if ok else "fail", r.get("verify_s"),
                              "rel. L2 %.1e" % (r.get("max_rel_l2") or 0) if ok else
                              short_error(r.get("error", ""), path), data, cpu=r.get("verify_cpu_s")))
        elif timed_out(r, "verify"):
            steps.append(Step("kernels " + s, "skip", None, "emulator budget: over %d CPU s" % a.kernel_budget))
        elif r.get("failed_step") == "verify":
            steps.append(Step("kernels " + s, "fail", r.get("verify_s"), short_error(r.get("error", ""), path)))
        else:
            steps.append(Step("kernels " + s, "skip", None, reached(r, "verify") or "not run"))
    for s in [] if a.no_nvrtc else only.get("compile", a.nvrtc_strategies):
        r = by[s]
        if "compile_errors" in r and r.get("failed_step") != "compile":
            steps.append(Step("nvrtc " + s, "ok", r.get("compile_s"), "%d kernels" % r["kernels"],
                              {"kernels": r["kernels"]}, cpu=r.get("compile_cpu_s")))
        elif timed_out(r, "compile"):
            steps.append(Step("nvrtc " + s, "fail", None, limit_detail(r), {"timeout": True}))
        elif r.get("failed_step") == "compile":
            steps.append(Step("nvrtc " + s, "fail", r.get("compile_s"), "%s errors: %s" % (
                r.get("compile_errors", "?"), short_error(r.get("error", ""), path)[:200]),
                {"errors": r.get("compile_errors")}, cpu=r.get("compile_cpu_s")))
        else:
            steps.append(Step("nvrtc " + s, "skip", None, reached(r, "compile") or "not run"))
    return steps


# ----------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------


def step_time(s):
    """The CPU time of a step's run where it has one, else its wall time."""
    t = s.get("cpu_s")
    return s.get("seconds") if t is None else t


def cell(step):
    if step is None:
        return ""
    t = "" if step_time(step) is None else " %s" % fmt_s(step_time(step))
    if step["status"] == "ok":
        return "ok" + t
    if step["status"] == "skip":
        return "–"
    return "**FAIL**" + t


def fmt_s(s):
    return "%.0f s" % s if s >= 10 else "%.1f s" % s


def fmt_long(s):
    if s >= 3600:
        return "%.1f hours" % (s / 3600)
    return "%.0f minutes" % (s / 60) if s >= 120 else "%.0f seconds" % s


def render_md(results, a, wall_s):
    lines = []
    add = lines.append
    add("# Model zoo")
    add("")
    add("Generated by `scripts/zoo/run.py` from a zoo built by `scripts/zoo/build.py` (random weights, "
        "nothing downloaded; see [the zoo's README](../scripts/zoo/README.md)). Each model in up to four "
        "variants: `ts` (TorchScript-based exporter, opset 17), `dynamo` (dynamo-based exporter, opset 18), "
        "`fp16` (the module in half precision) and `int8` (ONNX Runtime's static QDQ quantizer over the "
        "ts export). References: PyTorch's outputs (ONNX Runtime's for int8). Tolerances, relative L2: "
        "fp32 1e-4, fp16 1e-2, int8 5e-2.")
    add("")
    add("The run is one sweep (`souffle-cli sweep`, [python.md](python.md#sweeps)): a task per variant "
        "and strategy, each in a process of its own under CPU-time limits. Steps: **import** (load: "
        "import, inference, folding, lowering), **TE** (the TE program in the reference interpreter), "
        "**plan** (under %s), **kernels** (each plan's loop-IR kernels in the CPU emulator), **NVRTC** "
        "(the plan's kernels compiled for %s). Times are CPU seconds (user + system) of each step in "
        "its task's process on this machine (%s; wall times, which depend on the machine's other "
        "load, are in the JSON); a plan, kernel and NVRTC cell gives the sum over the strategies, "
        "`n/N` how many passed. – : not run (a step it needs failed, or the emulator's budget of %d "
        "CPU seconds per strategy was spent). Failures are listed below the table." % (
            ", ".join(a.strategies), a.archs, a.machine, a.kernel_budget))
    add("")
    if a.kernel_strategies != a.strategies or a.nvrtc_strategies != a.strategies:
        add("Kernels were verified under %s and compiled with NVRTC under %s only (the other "
            "strategies' plans were made, not built)." % (
                ", ".join(a.kernel_strategies), ", ".join(a.nvrtc_strategies)))
        add("")
    if a.note:
        add(a.note)
        add("")
    n_models = len({r["model"] for r in results})
    n_var = len(results)
    all_ok = [r for r in results if all(s["status"] == "ok" for s in r["steps"])]
    cpu = sum(step_time(s) or 0 for r in results for s in r["steps"])
    add("%d architectures, %d exported variants; %d variants pass every step they ran. The run: "
        "%s of CPU time (%s of wall time on the shared machine)." % (
            n_models, n_var, len(all_ok), fmt_long(cpu), fmt_long(wall_s)))
    add("")
    add("| model | variant | nodes → TEs | import | TE (rel. L2) | plans | kernels | NVRTC |")
    add("|---|---|---|---|---|---|---|---|")
    results = sorted(results, key=lambda r: (family_rank(r.get("family", "")), r["model"],
                                             VARIANT_ORDER.index(r["variant"])))
    shown = set()
    for r in results:
        steps = {s["step"]: s for s in r["steps"]}
        st = lambda n: steps.get(n)
        exp = steps.get("export")
        first = r["model"] not in shown
        shown.add(r["model"])
        name = "**%s**<br>%s: %s" % (r["model"], r.get("family", ""), r.get("source", "")) if first else ""
        if exp:
            add("| %s | %s | | **export failed** | | | | |" % (name, r["variant"]))
            continue
        imp = steps.get("import", {})
        size = "%s → %s" % (imp.get("onnx_nodes", "?"), imp.get("tes", "?")) if imp.get("status") == "ok" else ""
        te = steps.get("te")
        te_cell = cell(st("te")) if te else ""
        if te and te["status"] in ("ok", "fail") and te.get("max_rel_l2") is not None:
            te_cell += " (%.0e)" % te["max_rel_l2"]
        imp_cell = cell(st("import"))
        if imp.get("unsupported"):
            imp_cell += ": needs " + ", ".join(sorted(imp["unsupported"]))
        add("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, r["variant"], size, imp_cell, te_cell,
            group_cell(r["steps"], "plan "), group_cell(r["steps"], "kernels "),
            group_cell(r["steps"], "nvrtc ")))
    add("")
    fails = [(r, s) for r in results for s in r["steps"] if s["status"] == "fail"]
    skips = [(r, s) for r in results for s in r["steps"]
             if s["status"] == "skip" and s["detail"].startswith("emulator budget")]
    unsup = {}
    for r in results:
        for s in r["steps"]:
            for op, nodes in s.get("unsupported", {}).items():
                unsup.setdefault(op, []).append("%s/%s" % (r["model"], r["variant"]))
    if unsup:
        add("## Unsupported operators")
        add("")
        add("| operator | variants that need it | status |")
        add("|---|---|---|")
        for op in sorted(unsup, key=lambda o: (-len(unsup[o]), o)):
            status = ("on issue 14's operator list (waiting for it)" if op in ISSUE_14_OPS
                      else "not supported")
            names = unsup[op]
            shown = ", ".join("`%s`" % n for n in names[:6]) + (", ... (%d)" % len(names) if len(names) > 6 else "")
            add("| %s | %s | %s |" % (op, shown, status))
        add("")
    add("## Failures")
    add("")
    if not fails:
        add("None.")
    for r, s in fails:
        add("- `%s/%s` %s: %s" % (r["model"], r["variant"], s["step"], s["detail"].replace("|", "\\|")))
    add("")
    if skips:
        add("## Kernel verification beyond the emulator's budget")
        add("")
        for r, s in skips:
            add("- `%s/%s` %s: %s" % (r["model"], r["variant"], s["step"], s["detail"]))
        add("")
    return "\n".join(lines) + "\n"


FAMILIES = ["classification", "detection", "segmentation", "video", "vision", "vision transformer",
            "text encoder", "text decoder", "text encoder-decoder", "speech encoder", "sequence", "other"]


def family_rank(family):
    return FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)


def group_cell(steps, prefix):
    group = [s for s in steps if s["step"].startswith(prefix)]
    if not group:
        return ""
    ran = [s for s in group if s["status"] != "skip"]
    ok = [s for s in group if s["status"] == "ok"]
    secs = sum(step_time(s) or 0 for s in ran)
    if not ran:
        return "–"
    mark = "ok" if len(ok) == len(group) else ("**FAIL**" if any(s["status"] == "fail" for s in group) else "part")
    return "%s %d/%d %s" % (mark, len(ok), len(group), fmt_s(secs))


# ----------------------------------------------------------------------------------------------
# Expectations (CTest)
# ----------------------------------------------------------------------------------------------


def statuses(results):
    return {"%s/%s" % (r["model"], r["variant"]): {s["step"]: s["status"] for s in r["steps"]} for r in results}


def compare_expect(results, expect_path):
    with open(expect_path) as f:
        expected = json.load(f)
    got = statuses(results)
    diffs = []
    for key, steps in got.items():
        want = expected.get(key)
        if want is None:
            diffs.append("%s: not in %s" % (key, expect_path))
            continue
        for step, status in steps.items():
            if want.get(step) != status:
                detail = next(s["detail"] for r in results if "%s/%s" % (r["model"], r["variant"]) == key
                              for s in r["steps"] if s["step"] == step)
                diffs.append("%s %s: %s, expected %s (%s)" % (key, step, status, want.get(step, "no entry"), detail))
        for step in want:
            if step not in steps:
                diffs.append("%s %s: not run, expected %s" % (key, step, want[step]))
    return diffs


def write_json(path, results, wall, a):
    with open(path + ".tmp", "w") as f:
        json.dump(dict(results=results, wall_s=round(wall, 1), strategies=a.strategies,
                       kernel_budget=a.kernel_budget, archs=a.archs), f, indent=1)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", help="the zoo folder (build.py --out)")
    ap.add_argument("--from-json", nargs="+", metavar="FILE",
                    help="run nothing: render --md from these results (a later file's variant replaces an earlier's)")
    ap.add_argument("--cli", default=os.environ.get("SOUFFLE_CLI", "build/app/cli/souffle-cli"))
    ap.add_argument("--md", help="write the table here (e.g. docs/zoo.md)")
    ap.add_argument("--json", help="write every step's result here")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--variants", help="comma-separated variants (ts,dynamo,fp16,int8)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help="strategies to plan under")
    ap.add_argument("--kernel-strategies", help="strategies whose kernels are verified (default: --strategies)")
    ap.add_argument("--nvrtc-strategies", help="strategies whose kernels NVRTC compiles (default: --strategies)")
    ap.add_argument("--timeout", type=int, default=600, help="CPU seconds for import and each plan")
    ap.add_argument("--kernel-budget", type=int, default=300,
                    help="CPU seconds for TE verification and the emulator, per strategy (default 300)")
    ap.add_argument("--compile-timeout", type=int, default=1800, help="CPU seconds per NVRTC compile")
    ap.add_argument("--light-variants", default="",
                    help="variants whose kernels and NVRTC run under souffle only (e.g. dynamo,fp16)")
    ap.add_argument("--archs", default="sm_80,sm_90", help="NVRTC targets (default sm_80,sm_90)")
    ap.add_argument("--no-nvrtc", action="store_true", help="skip the NVRTC step")
    ap.add_argument("--no-kernels", action="store_true", help="skip kernel verification (emulator)")
    ap.add_argument("--workers", type=int, help="local processes (default: every core)")
    ap.add_argument("--scheduler", help="a Dask scheduler address: run the tasks on that cluster")
    ap.add_argument("--manifest", help="write the sweep's manifest here")
    ap.add_argument("--manifest-only", action="store_true", help="write --manifest, run nothing")
    ap.add_argument("--sweep-out", help="keep the sweep's sweep.json/.csv/.html in this folder")
    ap.add_argument("--machine", default="2 shared cores, no GPU", help="how the machine is described in the table")
    ap.add_argument("--expect", help="expected status of every step (JSON); exit 1 on any difference")
    ap.add_argument("--update-expect", action="store_true", help="write --expect instead of checking it")
    ap.add_argument("--note", help="a paragraph the table's text carries (what this run left out)")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    a.strategies = a.strategies.split(",")
    a.light_variants = set(a.light_variants.split(",")) if a.light_variants else set()
    a.kernel_strategies = a.kernel_strategies.split(",") if a.kernel_strategies else a.strategies
    a.nvrtc_strategies = a.nvrtc_strategies.split(",") if a.nvrtc_strategies else a.strategies
    for s in a.strategies + a.kernel_strategies + a.nvrtc_strategies:
        if s not in STRATEGIES:
            ap.error("unknown strategy %s" % s)
        if s not in a.strategies:
            ap.error("%s: kernels and NVRTC need a plan under that strategy (--strategies)" % s)
    if a.from_json:
        merged = {}
        wall = 0.0
        for path in a.from_json:
            with open(path) as f:
                d = json.load(f)
            wall += d.get("wall_s", 0)
            for r in d["results"]:
                merged[(r["model"], r["variant"])] = r
        results = list(merged.values())
        if a.md:
            with open(a.md, "w") as f:
                f.write(render_md(results, a, wall))
        return 0
    if not a.zoo:
        ap.error("--zoo is required (or --from-json)")
    if not a.manifest_only and not os.path.isfile(a.cli):
        ap.error("souffle-cli not found at %s (--cli or SOUFFLE_CLI)" % a.cli)
    only = set(a.only.split(",")) if a.only else None
    variants = set(a.variants.split(",")) if a.variants else None
    models = find_models(a.zoo, only, variants)
    if not models:
        ap.error("no models under %s" % a.zoo)

    # Variants whose export failed have no model to run: their zoo.json says why.
    results, runnable, metas = [], [], {}
    for model, variant, vdir in models:
        meta = read_meta(vdir)
        metas[(model, variant)] = meta
        if "error" in meta or not os.path.isfile(os.path.join(vdir, "model.onnx")):
            step = Step("export", "fail", meta.get("export_s"), "export: " + meta.get("error", "no model.onnx"))
            results.append((model, variant, [step]))
            continue
        runnable.append((model, variant, model_entry(model, variant, vdir, meta, a)))
    manifest = make_manifest([e for _, _, e in runnable], a)
    work = tempfile.mkdtemp(prefix="souffle-zoo-")
    try:
        manifest_path = a.manifest or os.path.join(work, "manifest.json")
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        if a.manifest_only:
            print("wrote %s (%d variants x %d strategies)" % (manifest_path, len(runnable), len(a.strategies)))
            return 0
        t0 = time.time()
        sweep = run_sweep(manifest_path, a.sweep_out or os.path.join(work, "sweep"), a) if runnable else {"rows": []}
        wall = time.time() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_name = {}
    for r in sweep["rows"]:
        by_name.setdefault(r["model"], []).append(r)
    for model, variant, entry in runnable:
        steps = variant_steps(by_name[entry["name"]], entry, a)
        results.append((model, variant, steps))
    order = {(m, v): i for i, (m, v, _) in enumerate(models)}
    results.sort(key=lambda x: order[(x[0], x[1])])
    out = []
    for model, variant, steps in results:
        meta = metas[(model, variant)]
        if not a.quiet:
            for st in steps:
                t = "" if st.cpu is None else "%7.1f s " % st.cpu
                print("%-28s %-6s %-22s %-4s %s%s" % (model, variant, st.name, st.status, t, st.detail),
                      flush=True)
        out.append(dict(model=model, variant=variant, source=meta.get("source", ""),
                        family=meta.get("family", ""), steps=[s.json() for s in steps]))
    results = out
    if a.json:
        write_json(a.json, results, wall, a)
    if a.md:
        with open(a.md, "w") as f:
            f.write(render_md(results, a, wall))
    total = sum(len(r["steps"]) for r in results)
    ok = sum(s["status"] == "ok" for r in results for s in r["steps"])
    print("zoo: %d variants, %d of %d steps ok, %.0f s" % (len(results), ok, total, wall))
    if a.expect:
        if a.update_expect:
            old = {}
            if os.path.isfile(a.expect):
                with open(a.expect) as f:
                    old = json.load(f)
            old.update(statuses(results))
            with open(a.expect, "w") as f:
                json.dump(old, f, indent=1, sort_keys=True)
                f.write("\n")
            print("wrote %s" % a.expect)
            return 0
        diffs = compare_expect(results, a.expect)
        for d in diffs:
            print("CHANGED " + d)
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
