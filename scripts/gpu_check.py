#!/usr/bin/env python3
"""The device check's run half (scripts/gpu_check.sh starts it): on a machine with a GPU, prove
the runner loads, runs, verifies and times a bundle, then profile every strategy of the sample
and paper-size models through souffle-runner, calibrate the device, time the same PyTorch
modules, and write results.md and results.json.

Every step is isolated: whatever it meets (a failed command, an answer that is not JSON, a NaN,
a bug of this script) becomes a row of the results, and the next step runs. results.md and
results.json are rewritten after every step, so a run killed at any point leaves what it
measured. Every answer the device gave is kept under OUT/answers/; --replay DIR answers the
device's steps from such files instead (the dry run replays tests/gpu_check/answers/).

The project's binaries get the CUDA toolkit's library folders; the Python steps (PyTorch,
torch.compile, the exporters) get this process's environment with every folder of the pack
taken out of it: a library packed for the binaries never reaches PyTorch."""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["mmoe", "bert", "efficientnet", "resnext", "lstm", "swin"]  # cheapest full-size first
STRATEGIES = ["unfused", "rules", "souffle"]
DEFAULT_REPLAY = os.path.join(ROOT, "tests", "gpu_check", "answers")
QUICK_BUDGET = 110  # seconds: the quick check proves the basics in under two minutes
BAD = ("failed", "mismatch", "timeout")

# Run by the Python of the check's environment: whether PyTorch imports and sees the GPU, and
# what this process was given (library path, shared objects it loaded).
TORCH_PROBE = r"""
import json, os, sys
r = {"python": sys.version.split()[0], "ld_library_path": os.environ.get("LD_LIBRARY_PATH", "")}
try:
    import torch
    r["torch"] = torch.__version__
    r["cuda"] = bool(torch.cuda.is_available())
    if r["cuda"]:
        r["device"] = torch.cuda.get_device_name(0)
        x = torch.ones(1024, device="cuda")
        r["cuda_sum"] = float((x + x).sum())
except ModuleNotFoundError as e:
    r["absent"] = str(e)
except Exception as e:
    r["error"] = "%s: %s" % (type(e).__name__, e)
try:
    with open("/proc/self/maps") as f:
        r["loaded"] = sorted({l.split()[-1] for l in f if ".so" in l.split()[-1]})
except OSError:
    pass
print(json.dumps(r))
"""


# ---------------------------------------------------------------------------------------------
# Numbers that may be NaN: the runner writes "nan" for a NaN error, the CLI's JSON null.


def num(v):
    """v as a float; NaN for null, "nan", a non-number or a missing value."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return math.nan
    return math.nan


def fmt(v, digits=1):
    x = num(v)
    if math.isnan(x):
        return "NaN" if isinstance(v, str) and v.strip().lower() == "nan" else ""
    return "" if x == 0 else "%.*f" % (digits, x)


def max_rel(outputs):
    """The largest relative L2 error of a profile's outputs; NaN when any is NaN or null."""
    vals = [num(o.get("rel_l2")) for o in outputs or [] if isinstance(o, dict)]
    if any(math.isnan(v) for v in vals):
        return math.nan
    return max(vals or [0.0])


# ---------------------------------------------------------------------------------------------
# Processes and the device's answers.


class Clock:
    def __init__(self, budget):
        self.start = time.time()
        self.deadline = self.start + budget

    def left(self):
        return self.deadline - time.time()


def run(cmd, timeout, env=None, cwd=ROOT, stdin=None):
    """(returncode, stdout, stderr, seconds); returncode None after a timeout or when the command
    cannot start (then stderr says why)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                           timeout=max(1, timeout), errors="replace")
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err + "\n(timed out after %.0f s)" % timeout, time.time() - t0
    except OSError as e:
        return None, "", "cannot start %s: %s" % (cmd[0], e), time.time() - t0


class Answers:
    """The device's answers to the commands that need it: from the device itself (each kept as
    record/KEY.json), or replayed from replay/KEY.json. A replayed file holds rc, stdout (or
    stdout_json, written out as the CLI writes JSON), stderr and seconds."""

    def __init__(self, replay=None, record=None):
        self.replay = replay
        self.record = record

    def run(self, key, cmd, timeout, env, stdin=None):
        if self.replay:
            path = os.path.join(self.replay, key + ".json")
            if not os.path.exists(path):
                return None, "", "no recorded answer %s" % os.path.relpath(path, ROOT), 0.0
            with open(path) as f:
                a = json.load(f)
            out = a.get("stdout", "")
            if "stdout_json" in a:
                out = json.dumps(a["stdout_json"], indent=1)
            elif "stdout_lines" in a:
                out = "\n".join(a["stdout_lines"]) + "\n"
            return a.get("rc"), out, a.get("stderr", ""), float(a.get("seconds", 0))
        rc, out, err, s = run(cmd, timeout, env, stdin=stdin)
        if self.record:
            os.makedirs(self.record, exist_ok=True)
            with open(os.path.join(self.record, key + ".json"), "w") as f:
                json.dump({"cmd": cmd, "rc": rc, "stdout": out, "stderr": err[-20000:], "seconds": round(s, 2)}, f)
        return rc, out, err, s


def runner_lines(stdout):
    """The runner's answers by id, and the lines that are not JSON (a runner killed mid-line,
    a message on the wrong stream)."""
    answers, bad = {}, []
    for n, line in enumerate(stdout.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            j = json.loads(line)
        except ValueError as e:  # json.JSONDecodeError
            bad.append("line %d is not JSON (%s): %s" % (n, e, line[:160]))
            continue
        if isinstance(j, dict) and "id" in j and "event" not in j:
            answers[j["id"]] = j
    return answers, bad


# ---------------------------------------------------------------------------------------------
# Environments: the binaries get the CUDA folders, Python never gets the pack.


def cuda_lib_dirs():
    """The CUDA toolkit's library folders (NVRTC, CUPTI) and those of the CUDA wheels PyTorch
    brings, for the project's binaries."""
    dirs = [d for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/extras/CUPTI/lib64",
                        "/usr/local/cuda/targets/x86_64-linux/lib") if os.path.isdir(d)]
    try:
        import importlib.util

        for mod in ("nvidia.cuda_nvrtc", "nvidia.cuda_cupti", "nvidia.cu13"):
            spec = importlib.util.find_spec(mod)
            for loc in (spec.submodule_search_locations or []) if spec else []:
                lib = os.path.join(loc, "lib")
                if os.path.isdir(lib):
                    dirs.append(lib)
    except Exception:  # a broken wheel is no reason to stop: the toolkit's folders remain
        pass
    return dirs


def names_pack(value, pack):
    pack = os.path.realpath(pack)
    return any(p and (os.path.realpath(p) == pack or os.path.realpath(p).startswith(pack + os.sep))
               for p in value.split(os.pathsep))


def python_env(pack, base=None):
    """The environment of the check's Python steps: `base` (this process's) without any folder of
    the pack in a search path, and without the CUDA folders the binaries get."""
    env = dict(os.environ if base is None else base)
    for key in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PATH"):
        if key in env:
            kept = [p for p in env[key].split(os.pathsep) if p and not names_pack(p, pack)]
            if kept:
                env[key] = os.pathsep.join(kept)
            else:
                del env[key]
    return env


def binary_env(pack, base=None):
    """The environment of souffle-cli and souffle-runner: the CUDA folders after whatever library
    path there is (the pack itself is found through the binaries' run paths)."""
    env = python_env(pack, base)
    dirs = cuda_lib_dirs()
    if dirs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join([p for p in [env.get("LD_LIBRARY_PATH", "")] if p] + dirs)
    if os.path.isdir("/usr/local/cuda/include"):
        env.setdefault("SOUFFLE_CUDA_INCLUDE", "/usr/local/cuda/include")
    return env


# ---------------------------------------------------------------------------------------------
# The check.


class Check:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        quick_budget = min(args.budget, QUICK_BUDGET) if args.quick else args.budget
        self.clock = Clock(quick_budget)
        self.pack = os.path.abspath(args.pack)
        self.cli = os.path.join(self.pack, "bin", "souffle-cli")
        self.runner = os.path.join(self.pack, "bin", "souffle-runner")
        self.bin_env = binary_env(self.pack)
        self.py_env = python_env(self.pack)
        replay = args.replay or (DEFAULT_REPLAY if args.dry_run else None)
        self.answers = Answers(replay=replay, record=None if replay else os.path.join(self.out, "answers"))
        self.work = tempfile.mkdtemp(prefix="gpu_check_")
        self.spec_file = None  # the device's spec, written from hello
        self.arch = None
        self.device_ok = True
        try:
            with open(os.path.join(self.pack, "pack.json")) as f:
                pack_info = json.load(f)
        except (OSError, ValueError):
            pack_info = None
        self.res = {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "mode": ("dry-run" if args.dry_run else "quick" if args.quick else "full"),
            "replayed_from": os.path.relpath(replay, ROOT) if replay else None,
            "host": os.uname().nodename,
            "cpus": os.cpu_count(),
            "glibc": " ".join(platform.libc_ver()),
            "pack": pack_info,
            "gpu": nvidia_smi() if not args.dry_run else {"note": "dry run: no device used"},
            "hello": None,
            "spec": None,
            "python_env": None,
            "steps": [],
            "profiles": [],
            "compiles": [],
            "export": None,
            "torch": None,
            "calibration": None,
            "tune": None,
            "timelines": [],
            "timeline_calibration": None,
        }

    def save(self):
        """results.json and results.md, each written whole (a kill mid-write keeps the last)."""
        os.makedirs(self.out, exist_ok=True)
        for name, text in (("results.json", lambda: json.dumps(self.res, indent=1, default=str)),
                           ("results.md", lambda: render(self.res))):
            tmp = os.path.join(self.out, "." + name + ".tmp")
            with open(tmp, "w") as f:
                f.write(text())
            os.replace(tmp, os.path.join(self.out, name))

    def row(self, name, seconds, status, detail=""):
        detail = detail or ""
        self.res["steps"].append({"step": name, "seconds": round(seconds, 1), "status": status, "detail": detail[-2000:]})
        last = detail.strip().splitlines()[-1][:120] if detail.strip() else ""
        print("gpu_check: %-44s %-9s %6.1fs %s" % (name, status, seconds, last), flush=True)

    def step(self, name, fn, *a):
        """Runs one step; whatever it raises becomes its row. The results are written after."""
        t0 = time.time()
        try:
            fn(name, *a)
        except Exception as e:  # a bug of the check or an answer it did not expect: a row, not the end
            self.row(name, time.time() - t0, "failed",
                     "the check itself failed here: %s: %s\n%s" % (type(e).__name__, e, traceback.format_exc(limit=4)))
        try:
            self.save()
        except Exception as e:  # a report that cannot be rendered must not end the check
            print("gpu_check: writing the results failed: %s" % e, file=sys.stderr, flush=True)

    def status(self, rc):
        return "ok" if rc == 0 else "timeout" if rc is None else "failed"

    # -- the steps --------------------------------------------------------------------------------

    def runner_starts(self, name):
        rc, out, err, s = run([self.runner, "--version"], 15, self.bin_env)
        if rc == 0:  # the CLI too: it needs more of the pack than the runner
            rc, cli_out, err, s2 = run([self.cli, "--help"], 15, self.bin_env)
            s += s2
            out += "" if rc == 0 else cli_out
        detail = out + err
        if rc != 0:
            need = self.res.get("pack") or {}
            detail += ("\nthe pack needs glibc %s and a C++ runtime with GLIBCXX_%s; this machine has %s"
                       % (need.get("glibc_needed", "?"), need.get("glibcxx_needed", "?"), self.res["glibc"]))
            self.device_ok = False
        self.row(name, s, self.status(rc), detail)

    def hello(self, name):
        req = json.dumps({"op": "hello", "id": 1}) + "\n"
        rc, out, err, s = self.answers.run("hello", [self.runner, "--backend", "cuda"], 20, self.bin_env, stdin=req)
        answers, bad = runner_lines(out)
        h = answers.get(1)
        self.res["hello"] = h
        if not h or not h.get("ok"):
            self.device_ok = False
            self.row(name, s, "failed", "no answer to hello: %s %s" % ("; ".join(bad), err))
            return
        devs = h.get("devices") or []
        if h.get("unavailable") or not devs:
            self.device_ok = False
            self.row(name, s, "failed", "no device: %s" % h.get("unavailable", "no device listed"))
            return
        d = devs[0]
        self.arch = d.get("arch")
        keys = ("name", "compute_capability", "sm_count", "shared_memory_per_sm", "max_shared_memory_per_block",
                "registers_per_sm", "max_threads_per_sm", "clock_mhz", "memory_clock_mhz", "memory_bus_bits",
                "memory_bytes", "l2_bytes")
        summary = ", ".join("%s %s" % (k, d[k]) for k in keys if k in d)
        spec = d.get("gpu_spec")
        if isinstance(spec, dict) and spec.get("gpus"):
            self.spec_file = os.path.join(self.out, "gpu_spec.json")
            with open(self.spec_file, "w") as f:
                json.dump(spec, f, indent=1)
            g = spec["gpus"][0]
            self.res["spec"] = {"file": "gpu_spec.json", "name": g.get("name"), "sm_count": g.get("sm_count"),
                                "source": g.get("source", "")}
            self.row(name, s, "ok", summary + "; planned as " + str(g.get("name")))
        else:
            self.res["spec"] = {"note": d.get("gpu_spec_note", "the runner sent no spec for the device")}
            self.row(name, s, "ok", summary + "; " + self.res["spec"]["note"] + ": planned for the default spec")

    def torch_imports(self, name):
        # Within the quick check's two minutes even when importing PyTorch hangs.
        rc, out, err, s = run([sys.executable, "-c", TORCH_PROBE], min(60, max(10, self.clock.left() - 30)), self.py_env)
        try:
            p = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.row(name, s, self.status(rc) if rc else "failed", out + err)
            return
        leaked = [x for x in p.get("loaded", []) if names_pack(x, self.pack)]
        env_names_pack = names_pack(p.get("ld_library_path", ""), self.pack)
        self.res["python_env"] = {"ld_library_path": p.get("ld_library_path", ""), "names_pack": env_names_pack,
                                  "loaded_from_pack": leaked, "torch": p.get("torch"), "cuda": p.get("cuda"),
                                  "device": p.get("device")}
        if leaked or env_names_pack:
            self.row(name, s, "failed", "the Python steps see the pack: %s" % (leaked or p.get("ld_library_path")))
        elif "error" in p:
            self.row(name, s, "failed", p["error"])
        elif "absent" in p:
            self.row(name, s, "absent", "no PyTorch in this Python: " + p["absent"])
        elif not p.get("cuda") and not self.args.dry_run:
            self.row(name, s, "failed", "PyTorch %s imports but sees no CUDA device" % p.get("torch"))
        else:
            self.row(name, s, "ok", "PyTorch %s%s" % (p.get("torch"), ", " + p["device"] if p.get("device") else ""))

    def gpu_args(self):
        return (["--gpu", self.spec_file] if self.spec_file else []) + (["--arch", self.arch] if self.arch else [])

    def profile(self, name, size, model, path, strategy, sync, form, runs):
        label = "-".join(x.strip("-").replace("-", "_") for x in [strategy, sync] + form)
        if not self.device_ok:
            self.row(name, 0, "skipped", "no device")
            return
        timeout = min(self.clock.left() - 10, 240)
        if timeout < 20:
            self.row(name, 0, "skipped", "out of time")
            return
        cmd = ([self.cli, "profile", path, "--strategy", strategy, "--sync", sync, "--runs", str(runs), "--json", "-q",
                "--runner", self.runner, "--timeout", "90"] + (["--gpu", self.spec_file] if self.spec_file else []) + form)
        rc, out, err, s = self.answers.run("profile-%s-%s-%s" % (size, model, label), cmd, timeout, self.bin_env)
        self.take_profile(name, size, model, rc, out, err, s)

    def take_profile(self, name, size, model, rc, out, err, s):
        try:
            j = json.loads(out)
        except ValueError as e:
            status = "timeout" if rc is None and "timed out" in err else ("skipped" if "no recorded answer" in err else "failed")
            self.row(name, s, status, "%s\n(profile output is not JSON: %s)" % (err, e) if out.strip() else err)
            return
        nans, notes = [], []
        for r in j.get("strategies", []):
            r["size"] = size
            r["model_name"] = model
            self.res["profiles"].append(r)
            if math.isnan(max_rel(r.get("outputs"))):
                nans.append("%s: an output is NaN" % r.get("strategy"))
            for k in ("graph_note", "counters_note"):
                if r.get(k) and r.get("gpu_time"):
                    notes.append("%s: %s" % (r.get("strategy"), r[k]))
        notes = nans + notes
        status = "ok" if rc == 0 else "mismatch" if rc == 1 else "failed"
        self.row(name, s, status, "\n".join(notes + [err.strip()]) if notes else err)

    def profile_emulator(self, name, path):
        rc, out, err, s = run([self.cli, "profile", path, "--strategy", "all", "--backend", "emulator", "--json", "-q"],
                              max(20, self.clock.left() - 10), self.bin_env)
        self.take_profile(name, "sample", os.path.basename(os.path.dirname(path)), rc, out, err, s)

    def profile_timeline(self, name, size, model, path, runs, backend="cuda"):
        """souffle's plan profiled with --timeline: per kernel the per-stage table (a CSV under
        OUT/timeline/) and the grid-barrier wait totals, and the instrumented kernels' time beside
        the plain plan's (the overhead). On the emulator (the dry run) the times are its cost
        model and CPU time, said so."""
        if backend == "cuda" and not self.device_ok:
            self.row(name, 0, "skipped", "no device")
            return
        timeout = min(self.clock.left() - 10, 240)
        if timeout < 20:
            self.row(name, 0, "skipped", "out of time")
            return
        tdir = os.path.join(self.out, "timeline", "%s-%s" % (size, model))
        cmd = [self.cli, "profile", path, "--strategy", "souffle", "--sync", "grid", "--runs", str(runs), "--json", "-q",
               "--timeline", "--timeline-dir", tdir]
        if backend == "cuda":
            cmd += ["--runner", self.runner, "--timeout", "90"] + (["--gpu", self.spec_file] if self.spec_file else [])
            rc, out, err, s = self.answers.run("profile-%s-%s-souffle-grid-timeline" % (size, model), cmd, timeout,
                                               self.bin_env)
        else:
            rc, out, err, s = run(cmd + ["--backend", "emulator"], timeout, self.bin_env)
        try:
            j = json.loads(out)
        except ValueError as e:
            status = "timeout" if rc is None and "timed out" in err else ("skipped" if "no recorded answer" in err else "failed")
            self.row(name, s, status, "%s\n(profile output is not JSON: %s)" % (err, e) if out.strip() else err)
            return
        r = next((x for x in j.get("strategies", []) if x.get("strategy") == "souffle"), None)
        if not r or not (r.get("timeline") or {}).get("kernels"):
            self.row(name, s, "failed", "no timeline in the answer\n" + err)
            return
        plain = next((p for p in self.res["profiles"] if p.get("size") == size and p.get("model_name") == model
                      and p.get("strategy") == "souffle" and p.get("sync", "grid") == "grid" and p.get("waves", True)
                      and p.get("weight_panels", True) and p.get("backend") == r.get("backend")), None)
        entry = timeline_entry(size, model, r, plain)
        os.makedirs(os.path.join(self.out, "timeline"), exist_ok=True)
        csv_path = os.path.join(self.out, "timeline", "%s-%s.stages.csv" % (size, model))
        with open(csv_path, "w") as f:
            f.write(timeline_stages_csv(r))
        entry["csv"] = os.path.relpath(csv_path, self.out)
        doc = (r.get("timeline") or {}).get("document")
        entry["document"] = doc if doc and os.path.exists(doc) else None
        self.res["timelines"].append(entry)
        with open(os.path.join(self.out, "timeline", "grid_barrier_waits.csv"), "w") as f:
            f.write(grid_wait_csv(self.res["timelines"]))
        status = "ok" if rc == 0 else "mismatch" if rc == 1 else "failed"
        self.row(name, s, status, timeline_line(entry) + ("\n" + err.strip() if err.strip() and status != "ok" else ""))

    def calibrate_from_timelines(self, name):
        """The GPU timelines' measured stage times as per-template corrections of the estimates
        (souffle-cli calibrate --from-timeline), joined to the device's calibration."""
        docs = [t["document"] for t in self.res["timelines"] if t.get("gpu_time") and t.get("document")]
        if not docs:
            self.row(name, 0, "skipped", "no GPU timeline document (the timeline steps did not run on a device)")
            return
        out = os.path.join(self.out, "calibration_timeline.json")
        cmd = [self.cli, "calibrate", "--out", out, "--json"]
        for d in docs:
            cmd += ["--from-timeline", d]
        if os.path.exists(os.path.join(self.out, "calibration.json")):
            cmd += ["--calibration", os.path.join(self.out, "calibration.json")]
        rc, o, err, s = run(cmd, 60, self.bin_env)
        try:
            self.res["timeline_calibration"] = json.loads(o).get("stage_corrections")
        except (ValueError, AttributeError):
            pass
        self.row(name, s, self.status(rc), err)

    def compile(self, name, size, model, path, strategy):
        rc, out, err, s = run([self.cli, "compile", path, "--strategy", strategy, "--batch", "16", "--json"]
                              + self.gpu_args(), max(20, self.clock.left() - 10), self.bin_env)
        entry = {"size": size, "model": model, "strategy": strategy, "rc": rc, "seconds": round(s, 1),
                 "gpu": self.res["spec"].get("name") if self.res.get("spec") else None}
        try:
            j = json.loads(out)
            entry.update(kernels=len(j["kernels"]), errors=j["errors"])
        except (ValueError, KeyError, TypeError):
            entry["error"] = (err or out)[-500:]
        self.res["compiles"].append(entry)
        self.row(name, s, self.status(rc), err)

    def calibrate(self, name):
        if not self.device_ok:
            self.row(name, 0, "skipped", "no device")
            return
        cal = os.path.join(self.out, "calibration.json")
        req = json.dumps({"op": "hello", "id": 1}) + "\n" + json.dumps({"op": "calibrate", "id": 2, "out": cal}) + "\n"
        rc, out, err, s = self.answers.run("calibrate", [self.runner, "--backend", "cuda"],
                                           min(120, max(5, self.clock.left() - 60)), self.bin_env, stdin=req)
        answers, bad = runner_lines(out)
        a = answers.get(2)
        if a and a.get("ok") and isinstance(a.get("calibration"), dict):
            self.res["calibration"] = a["calibration"]
            self.row(name, s, "ok", "; ".join(bad))
        elif "no recorded answer" in err:
            self.row(name, s, "skipped", err)
        elif a:
            self.row(name, s, "failed", "calibrate refused: %s" % json.dumps(a)[:1500])
        else:
            why = "the runner %s without an answer to calibrate" % ("timed out" if rc is None else "exited %s" % rc)
            self.row(name, s, "timeout" if rc is None else "failed", "; ".join([why] + bad + [err.strip()[-500:]]))

    def tune(self, name):
        if not self.device_ok:
            self.row(name, 0, "skipped", "no device")
            return
        bert = os.path.join(ROOT, "sample_models", "bert", "model.onnx")
        cmd = [self.cli, "compile", bert, "--tune", "measure", "--runner", "'%s'" % self.runner,
               "--tune-dir", os.path.join(self.work, "tune"), "--json", "-q"] + self.gpu_args()
        rc, out, err, s = self.answers.run("tune-sample-bert", cmd, min(60, self.clock.left() - 300), self.bin_env)
        try:
            self.res["tune"] = json.loads(out).get("tune")
        except (ValueError, AttributeError):
            pass
        self.row(name, s, "skipped" if "no recorded answer" in err else self.status(rc), err)

    def export(self, name, folder, models):
        summary = os.path.join(self.work, "export.json")
        rc, out, err, s = run([sys.executable, "scripts/export_models.py", "--full", "--out", folder, "--only",
                               ",".join(models), "--summary", summary], min(240, self.clock.left() - 120), self.py_env)
        if os.path.exists(summary):
            with open(summary) as f:
                self.res["export"] = json.load(f)
        self.row(name, s, self.status(rc), out + err)

    def torch_baselines(self, name, models):
        tj = os.path.join(self.out, "torch.json")
        cmd = [sys.executable, "scripts/torch_baseline.py", "--out", tj, "--budget", str(int(self.clock.left() - 15)),
               "--models", ",".join(models), "--runs", str(self.args.runs)]
        if self.args.quick or self.args.dry_run:
            cmd.append("--sample-only")
        if self.args.dry_run:
            cmd.append("--dry-run")
        rc, out, err, s = run(cmd, self.clock.left() - 5, self.py_env)
        if os.path.exists(tj):
            with open(tj) as f:
                self.res["torch"] = json.load(f)
        self.row(name, s, self.status(rc), out + err)


def timeline_entry(size, model, r, plain):
    """What results.json keeps of one profile --timeline: per kernel its stages, the wait share and
    the grid barriers' waits (count, total over blocks, the longest and its straggler); the
    instrumented time beside the plain plan's."""
    kernels = []
    for k in (r.get("timeline") or {}).get("kernels") or []:
        grid = [w for w in k.get("waits") or [] if w.get("kind") == "grid_barrier"]
        longest = max(grid, key=lambda w: num(w.get("total_us"))) if grid else None
        slow = k.get("slowest_stage") or {}
        kernels.append({
            "kernel": k.get("kernel"), "stages": len(k.get("stages") or []), "sample": k.get("sample"),
            "span_us": k.get("span_us"), "work_us": k.get("work_us"), "wait_us": k.get("wait_us"),
            "wait_share": k.get("wait_share"), "grid_barriers": len(grid),
            "grid_wait_us": sum(num(w.get("total_us")) for w in grid),
            "longest_grid_wait": None if not longest else {
                "before_stage": longest.get("before_stage"), "total_us": longest.get("total_us"),
                "max_us": longest.get("max_us"), "straggler": longest.get("straggler")},
            "slowest_stage": {"stage": slow.get("stage"), "name": slow.get("name"), "max_us": slow.get("max_us"),
                              "estimated_us": slow.get("estimated_us")} if slow else None})
    inst, base = num(r.get("kernels_us")), num((plain or {}).get("kernels_us"))
    over = 100.0 * (inst / base - 1) if plain and base > 0 and not math.isnan(inst) else None
    return {"size": size, "model": model, "backend": r.get("backend"), "gpu_time": bool(r.get("gpu_time")),
            "device": r.get("device"), "timer": r.get("timer"), "kernels": kernels,
            "kernels_us": r.get("kernels_us"), "plain_kernels_us": (plain or {}).get("kernels_us"),
            "end_to_end_us": r.get("end_to_end_us"), "plain_end_to_end_us": (plain or {}).get("end_to_end_us"),
            "overhead_pct": over, "verified": r.get("verified")}


def timeline_line(e):
    """One line for the step's row: the grid-barrier waits and the overhead."""
    unit = "us" if e.get("gpu_time") else "emulated us"
    barriers = sum(k["grid_barriers"] for k in e["kernels"])
    parts = ["%d kernel%s, %d stages, %d grid barrier%s waited %s %s in all over the blocks" % (
        len(e["kernels"]), "" if len(e["kernels"]) == 1 else "s", sum(k["stages"] for k in e["kernels"]),
        barriers, "" if barriers == 1 else "s", fmt(sum(k["grid_wait_us"] for k in e["kernels"]), 2), unit)]
    if e.get("overhead_pct") is not None:
        parts.append("instrumented %s us vs plain %s us (%+.1f%%%s)" % (
            fmt(e.get("kernels_us"), 2), fmt(e.get("plain_kernels_us"), 2), e["overhead_pct"],
            "" if e.get("gpu_time") else ", CPU time of the emulator"))
    else:
        parts.append("no plain profile of the plan to compare with")
    return "; ".join(parts)


def timeline_stages_csv(r):
    """The per-stage table of every kernel of a profile --timeline answer."""
    clock = "gpu" if r.get("gpu_time") else "emulated"
    lines = ["kernel,stage,name,template,blocks,median_us,min_us,max_us,slowest_block,estimated_us,clock"]
    q = lambda v: '"%s"' % str(v).replace('"', '""')
    for k in (r.get("timeline") or {}).get("kernels") or []:
        for st in k.get("stages") or []:
            lines.append(",".join([q(k.get("kernel")), str(st.get("stage")), q(st.get("name", "")), q(st.get("template", "")),
                                   str(st.get("blocks")), "%.4f" % num(st.get("median_us")), "%.4f" % num(st.get("min_us")),
                                   "%.4f" % num(st.get("max_us")), str(st.get("slowest_block")),
                                   "%.4f" % num(st.get("estimated_us")), clock]))
    return "\n".join(lines) + "\n"


def grid_wait_csv(entries):
    """The grid-barrier wait totals of every timeline profiled, one row per kernel."""
    lines = ["size,model,kernel,clock,grid_barriers,grid_wait_us,wait_share,longest_before_stage,longest_total_us,"
             "longest_straggler,instrumented_us,plain_us,overhead_pct"]
    for e in entries:
        for k in e["kernels"]:
            lw = k.get("longest_grid_wait") or {}
            lines.append(",".join(str(x) for x in [
                e["size"], e["model"], k["kernel"], "gpu" if e.get("gpu_time") else "emulated", k["grid_barriers"],
                "%.4f" % k["grid_wait_us"], "%.4f" % num(k.get("wait_share") or 0), lw.get("before_stage", ""),
                "%.4f" % num(lw["total_us"]) if lw else "", lw.get("straggler", ""), e.get("kernels_us"),
                e.get("plain_kernels_us") if e.get("plain_kernels_us") is not None else "",
                "%.2f" % e["overhead_pct"] if e.get("overhead_pct") is not None else ""]))
    return "\n".join(lines) + "\n"


def nvidia_smi():
    if not shutil.which("nvidia-smi"):
        return {"note": "nvidia-smi not found"}
    q = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,memory.total,temperature.gpu,power.draw"
    rc, out, err, _ = run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], 30)
    if rc != 0 or not out.strip():
        return {"note": "nvidia-smi failed: " + (err or out).strip()[:300]}
    vals = [v.strip() for v in out.strip().splitlines()[0].split(",")]
    return dict(zip(q.split(","), vals))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", required=True, help="folder with bin/souffle-cli, bin/souffle-runner, lib/")
    ap.add_argument("--out", required=True, help="results folder")
    ap.add_argument("--quick", action="store_true",
                    help="under two minutes: the runner loads, runs, verifies and times one small bundle; PyTorch imports")
    ap.add_argument("--dry-run", action="store_true", help="no device: its answers replayed, compiles and the emulator real")
    ap.add_argument("--replay", help="answer the device's steps from this folder's KEY.json files")
    ap.add_argument("--budget", type=float, default=480, help="seconds for the whole check")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--models", help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch baselines")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    c = Check(args)

    # A run stopped from outside still leaves its results (a SIGKILL leaves the last step's).
    def stop(signum, _frame):
        c.row("stopped", 0, "failed", "signal %d" % signum)
        c.save()
        sys.exit(3)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    models = [m.strip() for m in args.models.split(",")] if args.models else MODELS
    sample = lambda m: os.path.join(ROOT, "sample_models", m, "model.onnx")

    # The quick part, first in every mode: the runner and the device, PyTorch, one bundle.
    c.step("runner starts", c.runner_starts)
    c.step("runner hello", c.hello)
    c.step("pytorch imports (the check's environment)", c.torch_imports)
    c.step("sample mmoe souffle: load, run, verify, time", c.profile, "sample", "mmoe", sample("mmoe"), "souffle",
           "grid", [], 5)
    # The same plan instrumented: its timeline read back, and what the records cost.
    if c.clock.left() > 45:
        c.step("sample mmoe souffle --timeline: records, overhead", c.profile_timeline, "sample", "mmoe",
               sample("mmoe"), 5)
    if args.quick:
        return finish(c)

    c.step("calibrate", c.calibrate)
    if c.clock.left() > 360:
        c.step("sample bert compile --tune measure", c.tune)
    sets = [("sample", os.path.join(ROOT, "sample_models"))]
    if not args.dry_run:
        full_dir = os.path.join(c.work, "full")
        c.step("export paper-size models", c.export, full_dir, models)
        if os.path.isdir(full_dir):
            sets.append(("full", full_dir))
    for size, folder in sets:
        for m in models:
            path = os.path.join(folder, m, "model.onnx")
            if not os.path.exists(path):
                continue
            name = "%s %s" % (size, m)
            if args.dry_run:
                for strat in STRATEGIES:
                    c.step("%s %s compile %s" % (name, strat, c.arch or "(default arch)"), c.compile, size, m, path, strat)
                if m == "mmoe":
                    c.step(name + " profile (emulator, CPU time)", c.profile_emulator, path)
                    c.step(name + " souffle --timeline (emulator, emulated clock)", c.profile_timeline, size, m,
                           path, 1, "emulator")
            # Every strategy with grid barriers, then souffle's kernels with per-tile flags; for
            # the LSTM also souffle's kernels in program order and with the weights streamed
            # every step, the forms its waves and weight panels are measured against.
            runs = [("all", "grid", []), ("souffle", "flags", [])]
            if m == "lstm":
                runs += [("souffle", "grid", ["--no-waves"]), ("souffle", "grid", ["--no-weight-panels"])]
            for strategy, sync, form in runs:
                label = " ".join(["--sync " + sync] + form)
                c.step(name + " profile" + ("" if (sync, form) == ("grid", []) else " " + label), c.profile, size, m,
                       path, strategy, sync, form, args.runs)
            # souffle's plan with the timeline on: per-stage tables, grid-barrier waits, overhead.
            if size == "full":
                c.step(name + " souffle --timeline", c.profile_timeline, size, m, path, min(args.runs, 5))
    c.step("calibrate --from-timeline", c.calibrate_from_timelines)
    if not args.no_torch:
        c.step("pytorch baselines", c.torch_baselines, models)
    return finish(c)


def finish(c):
    shutil.rmtree(c.work, ignore_errors=True)
    c.save()
    print("gpu_check: wrote %s/results.md and results.json" % c.out, flush=True)
    bad = [s["step"] for s in c.res["steps"] if s["status"] in BAD]
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# results.md: each section on its own, so that one the data breaks says so and the rest stand.


def render(res):
    md = ["# Device check, %s (%s)" % (res.get("date", "?"), res.get("mode", "?")), ""]
    sections = [sec_device, sec_calibration, sec_tune, sec_profiles, sec_counters, sec_timelines, sec_compiles,
                sec_export, sec_torch, sec_steps]
    for sec in sections:
        try:
            md += sec(res)
        except Exception as e:  # one section the data breaks must not lose the others
            md += ["", "(%s could not be written: %s: %s)" % (sec.__name__[4:], type(e).__name__, e)]
    return "\n".join(md) + "\n"


def sec_device(res):
    g = res.get("gpu") or {}
    md = ["GPU: %s, driver %s; clocks seen at the start: SM %s, memory %s (max SM %s, memory %s); host %s, %s CPUs, %s."
          % (g.get("name", "?"), g.get("driver_version", "?"), g.get("clocks.sm", "?"), g.get("clocks.mem", "?"),
             g.get("clocks.max.sm", "?"), g.get("clocks.max.mem", "?"), res.get("host"), res.get("cpus"),
             res.get("glibc") or "glibc ?")]
    if res.get("replayed_from"):
        md += ["", "The device's answers are replayed from %s (recorded or constructed answers, not this machine's)."
               % res["replayed_from"]]
    d = ((res.get("hello") or {}).get("devices") or [{}])[0]
    if d.get("name"):
        md += ["", "Device as its driver reports it: %s, compute capability %s, %s SMs, %s KB shared memory per SM "
               "(%s KB per block), %s registers per SM, SM clock up to %s MHz, memory %s-bit at %s MHz."
               % (d.get("name"), d.get("compute_capability", "?"), d.get("sm_count", "?"),
                  int(num(d.get("shared_memory_per_sm")) / 1024) if d.get("shared_memory_per_sm") else "?",
                  int(num(d.get("max_shared_memory_per_block")) / 1024) if d.get("max_shared_memory_per_block") else "?",
                  d.get("registers_per_sm", "?"), d.get("clock_mhz", "?"), d.get("memory_bus_bits", "?"),
                  d.get("memory_clock_mhz", "?"))]
    spec = res.get("spec") or {}
    if spec.get("name"):
        md += ["", "Planned for: %s, %s SMs (%s; passed as --gpu %s)." % (spec["name"], spec.get("sm_count"),
                                                                        spec.get("source", "")[:400], spec.get("file"))]
    elif spec.get("note"):
        md += ["", "Planned for: the default spec (%s)." % spec["note"]]
    pe = res.get("python_env")
    if pe:
        md += ["", "Python steps: library path %s; %s of the pack loaded by PyTorch's process."
               % ("'%s'" % pe["ld_library_path"] if pe.get("ld_library_path") else "not set",
                  "nothing" if not pe.get("loaded_from_pack") else ", ".join(pe["loaded_from_pack"]))]
    return md


def sec_calibration(res):
    c = res.get("calibration")
    if not c:
        return []
    gb = ", ".join("%d blocks %.2f us" % (int(num(s.get("blocks"))), num(s.get("us"))) for s in c.get("grid_barrier", []))
    flags = ("a round of per-tile flags (release, one awaited tile) %.2f us, each further tile %.2f us"
             % (num(c.get("flag_round_us")), num(c.get("flag_tile_us", 0))) if c.get("flag_round_us") else
             "per-tile flags not measured")
    md = ["", "Calibration: launch %.2f us back to back (%.2f us as graph nodes); one grid barrier: %s; %s; copy %.0f GB/s."
          % (num(c.get("launch_overhead_us", 0)), num(c.get("graph_launch_us", 0)), gb or "not measured", flags,
             num(c.get("dram_bandwidth_gbps", 0)))]
    for what, key in (("fp32 SIMT", "fp32"), ("fp16 tensor-core", "fp16")):
        rate = num(c.get("gemm_%s_tflops" % key, 0))
        md.append("GEMM, the project's %s kernel at 4096 cubed: %s." % (
            what, "%.1f TFLOP/s (%s)" % (rate, c.get("gemm_%s_tile" % key, "")) if rate > 0 else "not measured"))
    if c.get("gemm_note"):
        md.append("GEMM note: %s." % c["gemm_note"])
    return md


def sec_tune(res):
    tune = res.get("tune")
    if not tune or not tune.get("problems"):
        return []
    md = ["", "GEMM tiles of the sample BERT timed on %s (compile --tune measure; the tile cost model's order first):"
          % tune.get("device", "?"), "", "| GEMM | timer | candidates, us per launch |", "|---|---|---|"]
    for t in tune["problems"]:
        cands = ", ".join("%s %s" % (x.get("tile"), "failed" if not num(x.get("us")) >= 0 else "%.2f" % num(x.get("us")))
                          for x in t.get("candidates", []))
        md.append("| %s | %s | %s |" % (t.get("problem"), t.get("timer", ""), cands))
    return md


def sec_profiles(res):
    if not res.get("profiles"):
        return []
    md = ["", "| model | strategy | kernels | estimated us (spec) | measured us, sum of kernels | end to end us | CUDA graph us | "
          "timer | max rel. L2 | verified |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["profiles"]:
        rel = max_rel(r.get("outputs"))
        verified = ("yes" if r.get("verified") else
                    "ERROR: " + str(r.get("error", ""))[:80] if r.get("error") else
                    "no: an output is NaN" if math.isnan(rel) else "no reference")
        md.append("| %s %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("size"), r.get("model_name"),
            str(r.get("strategy")) + ("" if r.get("sync", "grid") == "grid" else " (--sync %s)" % r["sync"])
            + ("" if r.get("waves", True) else " (--no-waves)")
            + ("" if r.get("weight_panels", True) else " (--no-weight-panels)"),
            len(r.get("kernels") or []), fmt(r.get("est_total_us")), fmt(r.get("kernels_us")), fmt(r.get("end_to_end_us")),
            fmt(r.get("graph_us")) or ("none: " + r["graph_note"][:60] if r.get("graph_note") and r.get("gpu_time") else ""),
            r.get("timer") if r.get("gpu_time") else "emulator (CPU time)",
            "NaN" if math.isnan(rel) else "%.1e" % rel, verified))
    return md


def sec_counters(res):
    # Per plan: the counted DRAM traffic against the estimate and the time-weighted occupancy;
    # per kernel only the five slowest of each plan (a recurrent model has thousands).
    mb = lambda b: "-" if b is None or math.isnan(num(b)) or num(b) < 0 else "%.2f" % (num(b) / 1e6)
    median = lambda k: num((k.get("time_us") or {}).get("median"))
    counted = []
    for r in res.get("profiles", []):
        ks = [k for k in r.get("kernels") or [] if num(k.get("dram_read_bytes", -1)) >= 0 and num(k.get("dram_write_bytes", -1)) >= 0]
        if ks:
            counted.append((r, ks))
    md = []
    if counted:
        md += ["", "Hardware counters (one run under CUPTI's range profiler), per plan:", "",
               "| model | strategy | kernels counted | est. DRAM MB | measured DRAM MB | achieved occupancy (time-weighted) |",
               "|---|---|---|---|---|---|"]
        for r, ks in counted:
            occ = [(median(k), num(k.get("achieved_occupancy"))) for k in ks if num(k.get("achieved_occupancy", -1)) >= 0]
            occ = [(t, o) for t, o in occ if not math.isnan(t)]
            w = sum(t for t, _ in occ)
            md.append("| %s %s | %s | %d of %d | %s | %s | %s |" % (
                r.get("size"), r.get("model_name"), r.get("strategy"), len(ks), len(r.get("kernels") or []),
                # A partition split into launches gives each its estimate: count it once.
                mb(sum(num(v) for v in {k.get("partition", k.get("name")): k.get("est_dram_bytes", 0) for k in ks}.values())),
                mb(sum(num(k["dram_read_bytes"]) + num(k["dram_write_bytes"]) for k in ks)),
                "%.0f%%" % (100 * sum(t * o for t, o in occ) / w) if w > 0 else "-"))
        md += ["", "The five slowest kernels of each counted plan (a split partition's launches each show its whole estimate):",
               "", "| model | strategy | kernel | us | est. DRAM MB | DRAM read MB | written MB | achieved occupancy |",
               "|---|---|---|---|---|---|---|---|"]
        for r, ks in counted:
            for k in sorted(ks, key=lambda k: -(median(k) if not math.isnan(median(k)) else -1))[:5]:
                occ = num(k.get("achieved_occupancy", -1))
                md.append("| %s %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    r.get("size"), r.get("model_name"), r.get("strategy"), k.get("name"), fmt(median(k)),
                    mb(k.get("est_dram_bytes", 0)), mb(k.get("dram_read_bytes")), mb(k.get("dram_write_bytes")),
                    "-" if math.isnan(occ) or occ < 0 else "%.0f%%" % (100 * occ)))
    notes = sorted({r.get("counters_note") or "" for r in res.get("profiles", []) if r.get("gpu_time")} - {""})
    for n in notes:
        md += ["", "Counters: " + n]
    gnotes = sorted({r.get("graph_note") or "" for r in res.get("profiles", []) if r.get("gpu_time")} - {""})
    for n in gnotes:
        md += ["", "CUDA graph: " + n]
    return md


def sec_timelines(res):
    if not res.get("timelines"):
        return []
    md = ["", "Timelines of souffle's kernels (profile --timeline; per-stage tables in timeline/SIZE-MODEL.stages.csv, "
          "every kernel's grid-barrier waits in timeline/grid_barrier_waits.csv):", "",
          "| model | clock | kernel | stages | grid barriers | grid-barrier wait, us over blocks | wait share | "
          "longest grid wait (before stage, straggler) | slowest stage, us (estimated) | instrumented vs plain us |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for e in res["timelines"]:
        over = ("%s vs %s (%+.1f%%)" % (fmt(e.get("kernels_us"), 2), fmt(e.get("plain_kernels_us"), 2), e["overhead_pct"])
                if e.get("overhead_pct") is not None else "no plain profile")
        for k in e["kernels"]:
            lw, sl = k.get("longest_grid_wait") or {}, k.get("slowest_stage") or {}
            md.append("| %s %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |" % (
                e["size"], e["model"], "GPU" if e.get("gpu_time") else "emulated (cost model)", k["kernel"], k["stages"],
                k["grid_barriers"], fmt(k["grid_wait_us"], 2), "%.0f%%" % (100 * num(k.get("wait_share") or 0)),
                "%s us (stage %s, block %s)" % (fmt(lw.get("total_us"), 2), lw.get("before_stage"), lw.get("straggler"))
                if lw else "-",
                "%s %s (%s)" % (sl.get("stage"), fmt(sl.get("max_us"), 2), fmt(sl.get("estimated_us"), 2)) if sl else "-",
                over))
    cal = res.get("timeline_calibration")
    if cal:
        md += ["", "Stage estimates corrected per template from the GPU timelines (calibration_timeline.json): " +
               ", ".join("%s x%.2f (%d stages)" % (c.get("template"), num(c.get("ratio")), int(num(c.get("stages"))))
                         for c in cal) + "."]
    return md


def sec_compiles(res):
    if not res.get("compiles"):
        return []
    md = ["", "| model | strategy | GPU spec | kernels | NVRTC errors | seconds |", "|---|---|---|---|---|---|"]
    for e in res["compiles"]:
        md.append("| %s %s | %s | %s | %s | %s | %s |" % (e.get("size"), e.get("model"), e.get("strategy"), e.get("gpu") or "default",
                                                         e.get("kernels", "?"), e.get("errors", e.get("error", "?")), e.get("seconds")))
    return md


def sec_export(res):
    ex = res.get("export")
    if not ex:
        return []
    md = ["", "Paper-size models exported with: %s." % ", ".join("%s %s" % (e.get("name"), e.get("exporter")) for e in ex)]
    for e in ex:
        if e.get("exporter_note"):
            md.append("%s: %s." % (e.get("name"), e["exporter_note"]))
    return md


def sec_torch(res):
    t = res.get("torch")
    if not t:
        return []
    md = []
    if t.get("models"):
        md += ["", "PyTorch %s on the same GPU (fp32, TF32 off; median of the timed runs, CUDA events):" % t.get("torch", "?"), "",
               "| model | eager ms | torch.compile ms | reduce-overhead ms | max-autotune ms | compile s |", "|---|---|---|---|---|---|"]
        for m in t["models"]:
            md.append("| %s %s | %s | %s | %s | %s | %s |" % (m.get("size"), m.get("name"), fmt(m.get("eager_ms"), 3),
                      fmt(m.get("compile_ms"), 3), fmt(m.get("reduce_overhead_ms"), 3), fmt(m.get("max_autotune_ms"), 3),
                      fmt(m.get("compile_s"), 1)))
    if t.get("note"):
        md += ["", t["note"]]
    return md


def sec_steps(res):
    md = ["", "| step | status | seconds | detail |", "|---|---|---|---|"]
    for s in res.get("steps", []):
        detail = ""
        if s.get("status") != "ok" and s.get("detail"):
            lines = [l for l in str(s["detail"]).strip().splitlines() if l.strip()]
            detail = lines[0][:200].replace("|", "/") if lines else ""
        md.append("| %s | %s | %s | %s |" % (s.get("step"), s.get("status"), s.get("seconds"), detail))
    return md


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
