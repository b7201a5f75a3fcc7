#!/usr/bin/env python3
"""Runs every model of a zoo (scripts/zoo/build.py's layout) through souffle-cli, step by step,
and writes one table: the result and time of each step, failures named by operator and node.

Steps, for each <model>/<variant>/model.onnx:
    import    souffle-cli inspect --json          (import, shape inference, folding, lowering)
    te        souffle-cli verify --level te       (reference interpreter vs the reference data)
    plan      souffle-cli plan --strategy S       (S = unfused, rules, souffle-paper, souffle)
    kernels   souffle-cli verify --level kernels --strategy S   (loop-IR kernels in the emulator)
    nvrtc     souffle-cli compile --strategy S --arch sm_80,sm_90 --batch 64

A step is skipped when the one it needs failed; kernel verification is skipped, with the reason,
when the step before it in that model used up the emulator's budget (--kernel-budget, CPU
seconds).
Standard library only: no torch needed.

    run.py --zoo DIR --cli build/app/cli/souffle-cli [--md docs/zoo.md] [--json FILE]
           [--only a,b] [--variants ts,dynamo] [--strategies souffle] [--kernel-budget 300]
           [--light-variants dynamo,fp16] [--no-kernels] [--no-nvrtc] [--expect FILE [--update-expect]]

With --expect FILE the run is a check: each step's status (ok, fail, skip) must be the one the
file records, else exit 1 naming the differences; --update-expect rewrites the file instead.
"""

import argparse
import collections
import json
import os
import re
import resource
import signal
import subprocess
import sys
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


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


Run = collections.namedtuple("Run", "rc out err wall cpu")


def run_cli(cli, args, cpu_limit, extra=()):
    """Runs souffle-cli with a limit of `cpu_limit` CPU seconds (user + system, all threads);
    rc None when the run went past it. Limits and times are CPU time: on a shared machine the
    wall time depends on everyone else's load, the CPU time much less. A wall-clock guard of
    30 times the limit catches a run that waits on nothing."""

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 10))

    t0 = time.time()
    c0 = child_cpu()
    try:
        p = subprocess.run([cli] + args[:2] + list(extra) + args[2:], capture_output=True, text=True, timeout=30 * cpu_limit + 60,
                           preexec_fn=limit)
        rc, out, err = p.returncode, p.stdout, p.stderr
        if rc in (-signal.SIGXCPU, -signal.SIGKILL):
            rc = None
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, err = None, ""
    return Run(rc, out, err, time.time() - t0, child_cpu() - c0)


def first_error(stderr, stdout=""):
    """The CLI's error line (it names the file, node and reason), shortened."""
    for text in (stderr, stdout):
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("error:") or line.startswith("internal error:") or line.startswith("ERROR"):
                return line
    lines = [l for l in (stderr or stdout).splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def short_error(msg, model_path):
    msg = msg.replace(model_path + ": ", "").replace(model_path, "MODEL")
    msg = re.sub(r"^(internal )?error: ", lambda m: "internal error: " if m.group(1) else "", msg)
    return msg[:400]


def parse_json(text):
    try:
        return json.loads(text)
    except ValueError:
        start = text.find("{")
        return json.loads(text[start:]) if start >= 0 else None


def done(name, status, r, detail, data=None):
    return Step(name, status, r.wall, detail, data, cpu=r.cpu)


def failed_step(name, r, model_path, timeout):
    if r.rc is None:
        return done(name, "fail", r, "timeout: over %d CPU s" % timeout, {"timeout": True})
    return done(name, "fail", r, short_error(first_error(r.err, r.out), model_path), {"rc": r.rc})


def step_import(cli, path, timeout, extra=()):
    r = run_cli(cli, ["inspect", path, "--json"], timeout, extra)
    if r.rc != 0:
        s = failed_step("import", r, path, timeout)
        j = parse_json(r.out) if r.out.strip() else None
        if j and j.get("unsupported"):
            s.data["unsupported"] = j["unsupported"]
            s.detail = "unsupported: " + "; ".join(
                "%s (%d: %s)" % (op, len(nodes), ", ".join(nodes[:3]) + (", ..." if len(nodes) > 3 else ""))
                for op, nodes in sorted(j["unsupported"].items()))
        return s
    j = parse_json(r.out)
    return done("import", "ok", r, "%d nodes -> %d TEs" % (j["onnx_nodes"], j["tes"]),
                {"onnx_nodes": j["onnx_nodes"], "tes": j["tes"], "load_ms": j["load_ms"]})


def step_verify(cli, path, level, strategy, tol, timeout, extra=()):
    name = "te" if level == "te" else "kernels " + strategy
    args = ["verify", path, "--level", level, "--json"]
    for k in ("rtol", "atol"):
        if k in tol:
            args += ["--" + k, "%g" % tol[k]]
    if strategy:
        args += ["--strategy", strategy]
    r = run_cli(cli, args, timeout, extra)
    j = parse_json(r.out) if r.rc in (0, 1) and r.out.strip() else None
    if j is None:
        return failed_step(name, r, path, timeout)
    data = {"max_rel_l2": j.get("max_rel_l2"), "max_abs": j.get("max_abs"),
            "mismatches": j.get("mismatches"), "rtol": j.get("rtol"), "atol": j.get("atol")}
    if level == "kernels":
        data.update(kernels=j.get("kernels"), grid_barriers=j.get("grid_barriers"), emulator_ms=j.get("run_ms"))
    else:
        data["interpreter_ms"] = j.get("run_ms")
    if r.rc == 0 and j.get("ok"):
        return done(name, "ok", r, "rel. L2 %.1e" % (j.get("max_rel_l2") or 0), data)
    if j.get("error"):
        return done(name, "fail", r, short_error(j["error"], path), data)
    bad = [c for c in j.get("checks", []) if not c.get("ok")]
    detail = "mismatch: " + ", ".join("%s %s" % (c["output"], c.get("detail", "")) for c in bad[:3])
    if not bad:
        detail = "no outputs compared"
    return done(name, "fail", r, detail, data)


def step_plan(cli, path, strategy, timeout, extra=()):
    name = "plan " + strategy
    r = run_cli(cli, ["plan", path, "--strategy", strategy, "--json"], timeout, extra)
    if r.rc != 0:
        return failed_step(name, r, path, timeout)
    j = parse_json(r.out)
    return done(name, "ok", r, "%d kernels, %d grid syncs, est. %.1f µs" % (
        j["kernels"], j["grid_syncs"], j["est_time_us"]),
        {"kernels": j["kernels"], "grid_syncs": j["grid_syncs"], "est_time_us": j["est_time_us"]})


def step_compile(cli, path, strategy, archs, timeout, extra=()):
    name = "nvrtc " + strategy
    args = ["compile", path, "--strategy", strategy, "--arch", archs, "--batch", "64", "--json"]
    r = run_cli(cli, args, timeout, extra)
    j = parse_json(r.out) if r.rc in (0, 1) and r.out.strip() else None
    if j is None:
        return failed_step(name, r, path, timeout)
    if r.rc == 0 and j.get("errors") == 0:
        return done(name, "ok", r, "%d kernels" % len(j["kernels"]), {"kernels": len(j["kernels"])})
    bad = [k for k in j.get("kernels", []) if k.get("error")]
    detail = "; ".join("%s: %s" % (k["name"], k["error"].splitlines()[0][:200]) for k in bad[:2])
    return done(name, "fail", r, "%d errors: %s" % (j.get("errors", 0), detail), {"errors": j.get("errors")})


def run_model(cli, model, variant, vdir, a, log):
    meta = read_meta(vdir)
    path = os.path.join(vdir, "model.onnx")
    steps = []
    if "error" in meta or not os.path.isfile(path):
        steps.append(Step("export", "fail", meta.get("export_s"), "export: " + meta.get("error", "no model.onnx")))
        return meta, steps
    tol = dict(VARIANT_TOLERANCE.get(variant, {}))
    tol.update({k: float(meta[k]) for k in ("rtol", "atol") if k in meta})
    # Arguments the model needs on every command (a corpus file's --dim NAME=VALUE).
    extra = meta.get("args", [])

    imp = step_import(cli, path, a.timeout, extra)
    steps.append(imp)
    log(imp)
    if imp.status != "ok":
        return meta, steps
    te = step_verify(cli, path, "te", None, tol, a.kernel_budget, extra)
    steps.append(te)
    log(te)
    plans = {}
    for s in a.strategies:
        st = step_plan(cli, path, s, a.timeout, extra)
        plans[s] = st
        steps.append(st)
        log(st)
    budget_hit = None
    light = variant in a.light_variants
    kernel_strategies = [s for s in a.kernel_strategies if not light or s == "souffle"]
    nvrtc_strategies = [s for s in a.nvrtc_strategies if not light or s == "souffle"]
    for s in [] if a.no_kernels else kernel_strategies:
        if plans[s].status != "ok":
            steps.append(Step("kernels " + s, "skip", None, "no plan"))
        elif te.status != "ok" and "mismatch" not in te.detail:
            steps.append(Step("kernels " + s, "skip", None, "TE level failed"))
        elif budget_hit:
            steps.append(Step("kernels " + s, "skip", None, "emulator budget: %s took over %d CPU s" % (
                budget_hit, a.kernel_budget)))
        else:
            st = step_verify(cli, path, "kernels", s, tol, a.kernel_budget, extra)
            if st.data.get("timeout"):
                budget_hit = "kernels " + s
                st = Step(st.name, "skip", st.seconds, "emulator budget: over %d CPU s" % a.kernel_budget,
                          cpu=st.cpu)
            steps.append(st)
            log(st)
    if not a.no_nvrtc:
        for s in nvrtc_strategies:
            if plans[s].status != "ok":
                steps.append(Step("nvrtc " + s, "skip", None, "no plan"))
                continue
            st = step_compile(cli, path, s, a.archs, a.compile_timeout, extra)
            steps.append(st)
            log(st)
    return meta, steps


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
    add("Steps: **import** (`inspect`: import, inference, folding, lowering), **TE** (`verify --level te`, "
        "the reference interpreter), **plan** (`plan` under %s), **kernels** (`verify --level kernels`: "
        "each plan's loop-IR kernels in the CPU emulator), **NVRTC** (`compile --arch %s "
        "--batch 64`). Times are CPU seconds (user + system) of each `souffle-cli` run on this machine "
        "(%s; wall times, which depend on the machine's other load, are in the JSON); a plan, "
        "kernel and NVRTC cell gives the sum over the strategies, `n/N` how many passed. "
        "– : not run (a step it needs failed, or the emulator's budget of %d CPU seconds per strategy was "
        "spent). Failures are listed below the table." % (
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
    if not os.path.isfile(a.cli):
        ap.error("souffle-cli not found at %s (--cli or SOUFFLE_CLI)" % a.cli)
    only = set(a.only.split(",")) if a.only else None
    variants = set(a.variants.split(",")) if a.variants else None
    models = find_models(a.zoo, only, variants)
    if not models:
        ap.error("no models under %s" % a.zoo)

    def log_for(model, variant):
        def log(step):
            if not a.quiet:
                t = "" if step.seconds is None else "%7.1f s " % step.seconds
                print("%-28s %-6s %-22s %-4s %s%s" % (model, variant, step.name, step.status, t, step.detail),
                      flush=True)
        return log

    t0 = time.time()
    results = []
    for model, variant, vdir in models:
        meta, steps = run_model(a.cli, model, variant, vdir, a, log_for(model, variant))
        if steps and steps[0].name == "export":
            log_for(model, variant)(steps[0])
        results.append(dict(model=model, variant=variant, source=meta.get("source", ""),
                            family=meta.get("family", ""), steps=[s.json() for s in steps]))
        if a.json:  # after every variant, so a long run that stops keeps what it did
            write_json(a.json, results, time.time() - t0, a)
    wall = time.time() - t0
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
