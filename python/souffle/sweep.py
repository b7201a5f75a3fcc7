"""Sweeps: plan / compile / verify / profile over every model x strategy x GPU, as whole
model x strategy tasks, on this machine's cores or on a Dask distributed cluster.

    souffle.sweep(["a.onnx", "b.onnx"], strategies=["rules", "souffle"], gpus=["a100", "h100"])
    python3 -m souffle sweep MANIFEST.json [--scheduler tcp://host:8786] [--out DIR]
    souffle-cli sweep MANIFEST.json ...        (runs the line above)

A task that raises or whose process dies (a lost worker, a crash) is run again, up to `retries`
more times, and is then reported as failed with the reason: every task has a row in the result.
A step that fails for the model's sake (a UserError, a kernel that does not build) is a result,
not a retry: its row says which step failed and why. With `timeout` (wall seconds) or
`cpu_timeout` (CPU seconds) each task runs in a process of its own that is killed at its limit;
its rows say `timeout`, with the step it was in, and the rows it finished are kept.
"""

import argparse
import concurrent.futures as cf
import csv
import html
import io
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

# "te" verifies the TE program (the reference interpreter) against the data; "verify" the plan's
# kernels in the emulator.
STEPS = ("plan", "compile", "te", "verify", "profile")
ALL_STRATEGIES = ("unfused", "rules", "souffle-paper", "souffle")


def _model_spec(m, base=""):
    """{"path", "name", "dims", "bind", "shapes", "data"} of a manifest or argument entry."""
    spec = {"path": m} if isinstance(m, (str, os.PathLike)) else dict(m)
    spec["path"] = os.fspath(spec["path"])
    if base and not os.path.isabs(spec["path"]):
        spec["path"] = os.path.normpath(os.path.join(base, spec["path"]))
    if "name" not in spec:
        p = spec["path"]
        stem = os.path.splitext(os.path.basename(p))[0]
        spec["name"] = os.path.basename(os.path.dirname(p)) if stem == "model" else stem
    return spec


def _fault_injection(spec):
    """Test hooks that make a task's process die, as a lost worker does:
    SOUFFLE_SWEEP_CRASH=TEXT kills every task whose model path contains TEXT;
    SOUFFLE_SWEEP_CRASH_ONCE=FILE kills the first task to create FILE;
    SOUFFLE_SWEEP_HOLD_ONCE=FILE: the first task to create FILE writes its process id there and
    sleeps (60 s at most), so that a test can kill the worker while it runs the task."""
    crash = os.environ.get("SOUFFLE_SWEEP_CRASH")
    if crash and crash in spec["model"]["path"]:
        os._exit(70)
    once = os.environ.get("SOUFFLE_SWEEP_CRASH_ONCE")
    if once and _first_to_create(once):
        os._exit(71)
    hold = os.environ.get("SOUFFLE_SWEEP_HOLD_ONCE")
    if hold and _first_to_create(hold + ".taken"):
        with open(hold + ".tmp", "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
        os.rename(hold + ".tmp", hold)  # whole, once there
        time.sleep(60)


def _first_to_create(path):
    """Whether this process created `path` (and no other before it)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _stall_injection(spec, step):
    """Test hooks for time limits: SOUFFLE_SWEEP_HANG=TEXT:STEP sleeps, SOUFFLE_SWEEP_SPIN=
    TEXT:STEP spins on the CPU, for ever, in STEP of every task whose model path contains TEXT."""
    for var in ("SOUFFLE_SWEEP_HANG", "SOUFFLE_SWEEP_SPIN"):
        text, _, at = os.environ.get(var, "").rpartition(":")
        if text and at == step and text in spec["model"]["path"]:
            while True:
                if var == "SOUFFLE_SWEEP_HANG":
                    time.sleep(1)


def _runs(spec, step):
    """Whether `step` runs in this task: it is asked for, and the task's strategy is one the
    step is limited to (a model entry's "step_strategies" first, then the sweep's)."""
    if step not in spec["steps"]:
        return False
    limits = dict(spec.get("step_strategies") or {})
    limits.update(spec["model"].get("step_strategies") or {})
    return step not in limits or spec["strategy"] in limits[step]


def run_task(spec, on_step=None):
    """One model x strategy job: loads the model once and runs the steps for every GPU.
    Returns {"rows": [...], "worker": "host:pid"}; step failures are in the rows.
    on_step(gpu, step, row): called as each step starts (with the row so far) and as each row
    ends (step None), so a watching process knows where a task it stops was."""
    _fault_injection(spec)
    tell = on_step or (lambda gpu, step, row: None)
    import souffle

    if spec.get("cache_dir"):
        os.environ["SOUFFLE_CACHE_DIR"] = spec["cache_dir"]
    m = spec["model"]
    worker = f"{socket.gethostname()}:{os.getpid()}"
    base = {"model": m["name"], "path": m["path"], "strategy": spec["strategy"]}
    rows = []
    t0, c0 = time.perf_counter(), time.process_time()
    tell(spec["gpus"][0] if spec["gpus"] else "", "load", None)
    _stall_injection(spec, "load")
    try:
        model = souffle.load(m["path"], dims=m.get("dims"), bind=m.get("bind"),
                             shapes=m.get("shapes"))
    except souffle.UserError as e:
        for gpu in spec["gpus"]:
            rows.append(dict(base, gpu=gpu, status="failed", failed_step="load", error=str(e)))
            tell(gpu, None, rows[-1])
        return {"rows": rows, "worker": worker}
    load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    info = model.info
    tol = {k: m[k] for k in ("rtol", "atol") if m.get(k) is not None}
    for gpu in spec["gpus"]:
        row = dict(base, gpu=gpu, status="ok", failed_step="", error="", load_s=round(load_s, 4),
                   load_cpu_s=round(load_cpu_s, 3),
                   onnx_nodes=info.get("onnx_nodes"), tes=info.get("tes"))
        rows.append(row)
        step = "plan"
        try:
            tell(gpu, step, row)
            _stall_injection(spec, step)
            t, u = time.perf_counter(), time.process_time()
            p = model.plan(strategy=spec["strategy"], gpu=gpu, precision=spec["precision"])
            d = p.data
            row.update(plan_s=round(time.perf_counter() - t, 4),
                       plan_cpu_s=round(time.process_time() - u, 3), kernels=d["kernels"],
                       launches=d["launches"], grid_syncs=d["grid_syncs"],
                       est_time_us=d["est_time_us"], dram_bytes=d["dram_bytes"])
            if _runs(spec, "compile"):
                step = "compile"
                tell(gpu, step, row)
                _stall_injection(spec, step)
                t, u = time.perf_counter(), time.process_time()
                c = p.compile(archs=spec["archs"], threads=1)
                row.update(compile_s=round(time.perf_counter() - t, 4),
                           compile_cpu_s=round(time.process_time() - u, 3),
                           compile_errors=c["errors"],
                           compiles_from_cache=sum(a["from_cache"] for k in c["kernels"]
                                                   for a in k["per_arch"]),
                           compiles=sum(len(k["per_arch"]) for k in c["kernels"]),
                           max_registers=max((k["registers"] for k in c["kernels"]), default=0))
                if not c["ok"]:
                    bad = next(k for k in c["kernels"] if not k["ok"])
                    raise _StepFailed(f"{bad['name']}: {bad.get('error', '')[:500]}")
            if _runs(spec, "te"):
                step = "te"
                tell(gpu, step, row)
                _stall_injection(spec, step)
                t, u = time.perf_counter(), time.process_time()
                v = p.verify(level="te", data=m.get("data"), **tol)
                row.update(te_s=round(time.perf_counter() - t, 4),
                           te_cpu_s=round(time.process_time() - u, 3), te_verified=v["ok"],
                           te_mismatches=v["mismatches"], te_max_abs=v["max_abs"],
                           te_max_rel_l2=v.get("max_rel_l2"))
                if not v["ok"]:
                    raise _StepFailed(_verify_failure(v))
            if _runs(spec, "verify"):
                step = "verify"
                tell(gpu, step, row)
                _stall_injection(spec, step)
                t, u = time.perf_counter(), time.process_time()
                v = p.verify(level="kernels", data=m.get("data"), **tol)
                row.update(verify_s=round(time.perf_counter() - t, 4),
                           verify_cpu_s=round(time.process_time() - u, 3), verified=v["ok"],
                           mismatches=v["mismatches"], max_abs=v["max_abs"],
                           max_rel_l2=v.get("max_rel_l2"))
                if not v["ok"]:
                    raise _StepFailed(_verify_failure(v))
            if _runs(spec, "profile"):
                step = "profile"
                tell(gpu, step, row)
                _stall_injection(spec, step)
                t, u = time.perf_counter(), time.process_time()
                r = p.profile(backend=spec["backend"], runner=spec.get("runner"),
                              data=m.get("data"))
                row.update(profile_s=round(time.perf_counter() - t, 4),
                           profile_cpu_s=round(time.process_time() - u, 3),
                           kernels_us=r.get("kernels_us"), end_to_end_us=r.get("end_to_end_us"),
                           profile_device=r.get("device", ""))
                if r.get("error"):
                    raise _StepFailed(r["error"])
        except (souffle.UserError, _StepFailed) as e:
            row.update(status="failed", failed_step=step, error=str(e))
        tell(gpu, None, row)
    return {"rows": rows, "worker": worker}


class _StepFailed(Exception):
    pass


def _verify_failure(v):
    """Why a verify result is not ok, in a line: its error, or the outputs outside tolerance."""
    if v.get("error"):
        return v["error"]
    bad = [c for c in v.get("checks", []) if not c.get("ok")]
    if bad:
        return "mismatch: " + ", ".join(f"{c.get('output', '?')} {c.get('detail', '')}".strip()
                                        for c in bad[:3])
    return f"{v.get('mismatches', 0)} elements outside the tolerance"


def _limit_text(timeout, cpu_limit):
    """cpu_limit: {"by": "task" or a step, "cpu_s"}, the CPU limit that stopped the task."""
    if cpu_limit is None:
        return f"over the task's time limit of {timeout:g} s"
    if cpu_limit["by"] == "task":
        return f"over the task's CPU limit of {cpu_limit['cpu_s']:g} s"
    return f"over the CPU limit of {cpu_limit['cpu_s']:g} s for step {cpu_limit['by']}"


def _set_limits(cpu_timeout):
    """In the task's process as it starts: a CPU-time limit (SIGXCPU at the soft limit,
    SIGKILL at the hard one) and, on Linux, death with the process that started it (a Dask
    worker killed mid-task takes its task's process along)."""
    if cpu_timeout:
        _cpu_limit_at(cpu_timeout)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _cpu_used():
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_limit_at(seconds):
    """SIGXCPU (which ends the process) once it has used `seconds` of CPU time, all threads."""
    import math
    import resource

    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = max(1, math.ceil(seconds))
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def run_task_limited(spec, timeout=None, cpu_timeout=None):
    """run_task in a process of its own (`python3 -m souffle.sweep --task`), stopped when it runs
    past `timeout` wall seconds, `cpu_timeout` CPU seconds or the CPU seconds its spec's
    "step_cpu_timeout" gives the step it is in: then the rows it finished are kept
    and the others say status "timeout", with the step it was in. A process that dies otherwise
    raises RuntimeError (a failed attempt, run again like a lost worker's task)."""
    # The limits are set by the task's process itself (no preexec_fn: Dask workers have threads).
    cmd = [sys.executable, "-m", "souffle.sweep", "--task", f"{cpu_timeout or 0:g}"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    said = {"rows": {}, "partial": {}, "at": ("", "load"), "result": None, "limit": None}
    err = []

    def read_out():
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "result" in msg:
                said["result"] = msg["result"]
            elif msg.get("step") is None:
                said["rows"][msg["gpu"]] = msg["row"]
            else:
                said["at"] = (msg["gpu"], msg["step"])
                said["partial"][msg["gpu"]] = msg["row"]
                said["limit"] = msg.get("limit")

    readers = [threading.Thread(target=read_out, daemon=True),
               threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)]
    for r in readers:
        r.start()
    proc.stdin.write(json.dumps(spec))
    proc.stdin.close()
    t0 = time.perf_counter()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    for r in readers:
        r.join(timeout=5)
    if said["result"] is not None and proc.returncode == 0:
        return said["result"]
    cpu = (proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not timed_out and
           said["limit"] is not None)
    if not (timed_out or cpu):
        tail = "".join(err).strip().splitlines()[-3:]
        raise RuntimeError(f"its process died (exit {proc.returncode})" +
                           (f": {' / '.join(tail)}" if tail else ""))
    why = _limit_text(timeout, said["limit"] if cpu else None)
    m = spec["model"]
    gpu_at, step_at = said["at"]
    rows = []
    for gpu in spec["gpus"]:
        if gpu in said["rows"]:
            rows.append(said["rows"][gpu])
            continue
        here = step_at == "load" or gpu == gpu_at
        # The figures of the steps it finished, then where it stopped.
        row = dict(said["partial"].get(gpu) or {"model": m["name"], "path": m["path"],
                                                 "strategy": spec["strategy"], "gpu": gpu})
        row.update(status="timeout", failed_step=step_at if here else "",
                   error=(f"{why} in step {step_at}" if here else
                          f"not run: the task stopped {why}"),
                   task_s=round(time.perf_counter() - t0, 2))
        rows.append(row)
    return {"rows": rows, "worker": f"{socket.gethostname()}:{proc.pid}", "timed_out": why}


def _task_main(cpu_timeout):
    """`python3 -m souffle.sweep --task CPU_SECONDS`: one task's spec on stdin; a JSON line on
    stdout per step started and row ended, then the result. The task's own prints go to
    stderr."""
    _set_limits(cpu_timeout)
    spec = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    steps = spec.get("step_cpu_timeout") or {}

    def on_step(gpu, step, row):
        msg = {"gpu": gpu, "step": step, "row": row}
        if step is not None:
            # The nearer of the task's CPU limit and this step's, from the CPU used so far.
            limits = [(cpu_timeout, "task", cpu_timeout)] if cpu_timeout else []
            if steps.get(step):
                limits.append((_cpu_used() + steps[step], step, steps[step]))
            if limits:
                at, by, seconds = min(limits)
                _cpu_limit_at(at)
                msg["limit"] = {"by": by, "cpu_s": seconds}
        out.write(json.dumps(msg) + "\n")

    result = run_task(spec, on_step)
    out.write(json.dumps({"result": result}) + "\n")
    out.close()
    return 0


class SweepResult:
    """Every task's rows (one per model x strategy x GPU) and every task's fate."""

    def __init__(self, rows, tasks, wall_s, where):
        self.rows, self.tasks, self.wall_s, self.where = rows, tasks, wall_s, where

    @property
    def ok(self):
        return all(r["status"] == "ok" for r in self.rows)

    @property
    def failed(self):
        return [r for r in self.rows if r["status"] != "ok"]

    def to_dict(self):
        return {"where": self.where, "wall_s": self.wall_s, "tasks": self.tasks,
                "rows": self.rows}

    def to_json(self, path=None):
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def columns(self):
        cols = []
        for r in self.rows:
            cols += [k for k in r if k not in cols]
        return cols

    def to_csv(self, path=None):
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.columns())
        w.writeheader()
        w.writerows(self.rows)
        if path:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(buf.getvalue())
        return buf.getvalue()

    def to_html(self, path=None):
        cols = [c for c in self.columns() if c != "path"]
        ok = sum(r["status"] == "ok" for r in self.rows)
        late = sum(r["status"] == "timeout" for r in self.rows)
        late_text = f", {late} past their time limit" if late else ""
        retried = sum(t["attempts"] > 1 or bool(t["problems"]) for t in self.tasks)
        lost = [t for t in self.tasks if t.get("lost")]
        lost_text = (f" {len(lost)} of them re-run after the worker or process running them was "
                     f"lost ({sum(t['lost'] for t in lost)} executions lost)." if lost else "")
        out = ["<!doctype html><meta charset='utf-8'><title>Souffle sweep</title>",
               "<style>body{font:13px sans-serif}td,th{padding:2px 6px;border-bottom:1px solid "
               "#ddd;text-align:right}td.l,th{text-align:left}tr.failed{background:#fdd}"
               "tr.timeout{background:#fed}</style>",
               f"<h1>Sweep: {len(self.rows)} rows, {ok} ok, {len(self.rows) - ok - late} failed"
               f"{late_text}</h1>",
               f"<p>{len(self.tasks)} tasks (model x strategy) on {html.escape(self.where)} in "
               f"{self.wall_s:.1f} s; {retried} run more than once or with problems.{lost_text}"
               "</p>",
               "<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"]
        for r in self.rows:
            cells = []
            for c in cols:
                v = r.get(c, "")
                v = f"{v:.2f}" if isinstance(v, float) else str(v)
                cls = " class='l'" if c in ("model", "strategy", "gpu", "status", "error",
                                            "failed_step") else ""
                cells.append(f"<td{cls}>{html.escape(v)}</td>")
            out.append(f"<tr class='{r['status']}'>" + "".join(cells) + "</tr>")
        out.append("</table><h2>Tasks</h2><table><tr><th>model</th><th>strategy</th>"
                   "<th>status</th><th>attempts</th><th>lost</th><th>worker</th><th>problems</th></tr>")
        for t in self.tasks:
            out.append(f"<tr><td class='l'>{html.escape(t['model'])}</td><td class='l'>"
                       f"{html.escape(t['strategy'])}</td><td class='l'>{t['status']}</td>"
                       f"<td>{t['attempts']}</td><td>{t.get('lost', 0)}</td>"
                       f"<td class='l'>{html.escape(t['worker'])}</td>"
                       f"<td class='l'>{html.escape('; '.join(t['problems']))}</td></tr>")
        out.append("</table>")
        text = "\n".join(out) + "\n"
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def write(self, folder):
        """sweep.json, sweep.csv and sweep.html in `folder`; returns their paths."""
        os.makedirs(folder, exist_ok=True)
        paths = [os.path.join(folder, f"sweep.{x}") for x in ("json", "csv", "html")]
        self.to_json(paths[0])
        self.to_csv(paths[1])
        self.to_html(paths[2])
        return paths

    def _repr_html_(self):
        return self.to_html()

    def __repr__(self):
        return (f"<souffle.SweepResult {len(self.rows)} rows, {len(self.failed)} failed, "
                f"{self.wall_s:.1f} s on {self.where}>")


def _failed_rows(spec, reason):
    m = spec["model"]
    return [{"model": m["name"], "path": m["path"], "strategy": spec["strategy"], "gpu": g,
             "status": "failed", "failed_step": "task", "error": reason} for g in spec["gpus"]]


class _Tracker:
    """Each task's attempts and outcome; decides when a failed attempt is run again.
    A task's "attempts" counts every execution of it, those lost with their process or worker
    ("lost" of them) included; `retries` limits the attempts the sweep itself charges to the
    task (those it started, not those run again after a neighbour's death or by the Dask
    scheduler)."""

    def __init__(self, specs, retries, progress):
        self.specs, self.retries, self.progress = specs, retries, progress
        self.tasks = [{"model": s["model"]["name"], "strategy": s["strategy"], "status": "pending",
                       "attempts": 0, "lost": 0, "worker": "", "problems": []} for s in specs]
        self.results = [None] * len(specs)
        self.charged = [0] * len(specs)
        self.reasons = [""] * len(specs)

    def started(self, i):
        self.tasks[i]["attempts"] += 1
        self.charged[i] += 1

    def lost(self, i, reason):
        """An execution lost with its process (not charged: it is run again)."""
        t = self.tasks[i]
        t["attempts"] += 1
        t["lost"] += 1
        t["problems"].append(f"attempt {t['attempts']}: {reason}")

    def account(self, i, attempts, lost, problems):
        """The executions of a task as counted elsewhere (the Dask workers' reports)."""
        self.tasks[i].update(attempts=attempts, lost=lost, problems=problems)
        if self.tasks[i]["status"] == "failed":
            self.results[i] = self._gave_up(i)

    def done(self, i, value, noted=False):
        """A task that ended: ok, or stopped at its time limit (not run again: it would stop
        there again), with every row. noted: its problems are already written."""
        self.tasks[i].update(status="timeout" if value.get("timed_out") else "ok",
                             worker=value["worker"])
        if value.get("timed_out") and not noted:
            self.tasks[i]["problems"].append(f"attempt {self.tasks[i]['attempts']}: stopped "
                                             f"{value['timed_out']}")
        self.results[i] = value["rows"]
        if self.progress:
            self.progress(self.tasks[i], value["rows"])

    def failed(self, i, reason, noted=False):
        """Records a failed attempt; True when the task should run again."""
        t = self.tasks[i]
        if not noted:
            t["problems"].append(f"attempt {t['attempts']}: {reason}")
        if self.charged[i] <= self.retries:
            return True
        t["status"] = "failed"
        self.reasons[i] = reason
        self.results[i] = self._gave_up(i)
        if self.progress:
            self.progress(t, self.results[i])
        return False

    def _gave_up(self, i):
        t = self.tasks[i]
        lost = f", {t['lost']} lost with their process" if t["lost"] else ""
        return _failed_rows(self.specs[i], f"gave up after {t['attempts']} attempts{lost}: "
                                           f"{self.reasons[i]}")


def _pool_task(i, spec, marks):
    """run_task in a pool's process, first leaving a mark that task `i` started there."""
    with open(os.path.join(marks, str(i)), "w", encoding="utf-8"):
        pass
    return run_task(spec)


def _run_local(specs, tracker, workers):
    """A process pool on this machine. A process that dies breaks the whole pool, so the tasks
    it had started and not finished are suspects: each runs again alone in a process of its
    own, where a death is its own (an attempt counted); tasks not yet started go back to the
    pool without counting one."""
    import tempfile

    ctx = multiprocessing.get_context("spawn")
    queue = list(range(len(specs)))
    while queue:
        suspects = []
        with tempfile.TemporaryDirectory() as marks, \
                cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(_pool_task, i, specs[i], marks): i for i in queue}
            queue = []
            for f in cf.as_completed(futures):
                i = futures[f]
                try:
                    value = f.result()
                except cf.process.BrokenProcessPool:
                    if os.path.exists(os.path.join(marks, str(i))):
                        suspects.append(i)
                        tracker.lost(i, "lost: its pool's process (its own or a neighbour's) "
                                        "died while it ran; run again alone")
                    else:
                        queue.append(i)
                    continue
                except Exception as e:  # noqa: BLE001 — a failure of the task is reported
                    tracker.started(i)
                    if tracker.failed(i, f"{e.__class__.__name__}: {e}"):
                        queue.append(i)
                    continue
                tracker.started(i)
                tracker.done(i, value)
        # Each suspect alone, `workers` at a time, until it ends or its attempts run out.
        while suspects:
            batch, suspects = suspects[:workers], suspects[workers:]
            pools = [cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) for _ in batch]
            try:
                futures = {}
                for i, pool in zip(batch, pools):
                    tracker.started(i)
                    futures[pool.submit(run_task, specs[i])] = i
                for f in cf.as_completed(futures):
                    i = futures[f]
                    try:
                        tracker.done(i, f.result())
                    except cf.process.BrokenProcessPool:
                        if tracker.failed(i, "its process died"):
                            suspects.append(i)
                    except Exception as e:  # noqa: BLE001
                        if tracker.failed(i, f"{e.__class__.__name__}: {e}"):
                            suspects.append(i)
            finally:
                for pool in pools:
                    pool.shutdown(wait=True, cancel_futures=True)


def _run_local_limited(specs, tracker, workers, timeout, cpu_timeout):
    """Each task in a process of its own (run_task_limited), `workers` at a time: a process
    that dies or runs past its limit is that task's alone."""
    pending = list(range(len(specs)))
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        while pending:
            futures = {}
            for i in pending:
                tracker.started(i)
                futures[pool.submit(run_task_limited, specs[i], timeout, cpu_timeout)] = i
            pending = []
            for f in cf.as_completed(futures):
                i = futures[f]
                try:
                    tracker.done(i, f.result())
                except Exception as e:  # noqa: BLE001 — a failure of the task is reported
                    if tracker.failed(i, str(e)):
                        pending.append(i)


_DASK_TOPIC = "souffle-sweep-start"


def _dask_task(limited, tag, spec, timeout, cpu_timeout):
    """A sweep task on a Dask worker: it first tells the scheduler it started there (an event
    the sweep counts, so an execution lost with its worker is an attempt too), then runs."""
    try:
        from distributed import get_worker

        w = get_worker()
        w.log_event(_DASK_TOPIC, dict(tag, worker=w.address, pid=os.getpid(), at=time.time()))
        time.sleep(0.02)  # the worker sends its events every 2 ms
    except (ImportError, ValueError, AttributeError):
        pass
    if limited:
        return run_task_limited(spec, timeout, cpu_timeout)
    return run_task(spec)


def _dask_attempts(history, starts):
    """(attempts, lost, problems) of one task from its submissions [[key, outcome, reason]]
    (outcome: "pending", "result", "timeout", "raised" or "lost") and the executions its
    workers reported, {key: [event, ...]}. Every execution of a key but its last that ended is
    one lost with its worker (the scheduler runs a key again only then)."""
    n, lost, problems = 0, 0, []
    for key, outcome, reason in history:
        runs = sorted(starts.get(key, {}).values(), key=lambda e: e["at"])
        ended = outcome in ("result", "timeout", "raised")
        count = max(len(runs), 1 if outcome != "pending" else 0)
        for k in range(count):
            n += 1
            where = (f" {runs[k]['worker']} (process {runs[k]['pid']})" if k < len(runs)
                     else "")
            if k < count - 1 or outcome == "lost":
                lost += 1
                again = "the scheduler ran it again" if k < count - 1 else "not run again"
                problems.append(f"attempt {n}: lost with its worker{where} while it ran; "
                                f"{again}")
            elif ended and outcome != "result":
                problems.append(f"attempt {n}: {reason}")
        if outcome == "lost":
            problems.append(f"the scheduler gave up on it: {reason}")
    return n, lost, problems


def _run_dask(specs, tracker, client, timeout=None, cpu_timeout=None):
    """Tasks on a Dask cluster. The scheduler itself re-runs the tasks of a worker that dies
    (up to its allowed-failures): each such execution is counted from the event the task sends
    as it starts. A task that still fails (KilledWorker, an exception) is submitted again here
    until `retries` is used up."""
    from dask.distributed import as_completed

    sweep_id = uuid.uuid4().hex
    starts = {}  # key -> {(worker, pid, at): event}
    history = [[] for _ in specs]
    lock = threading.Lock()

    def on_start(event):
        msg = event[1]
        if isinstance(msg, dict) and msg.get("sweep") == sweep_id:
            with lock:
                starts.setdefault(msg["key"], {})[(msg["worker"], msg["pid"], msg["at"])] = msg

    def settle(i):
        with lock:
            tracker.account(i, *_dask_attempts(history[i], starts))

    def submit(i):
        tracker.started(i)
        key = f"souffle-{specs[i]['model']['name']}-{specs[i]['strategy']}-{i}-" \
              f"{tracker.charged[i]}"
        limited = bool(timeout or cpu_timeout or specs[i].get("step_cpu_timeout"))
        f = client.submit(_dask_task, limited, {"sweep": sweep_id, "key": key}, specs[i],
                          timeout, cpu_timeout, key=key, pure=False)
        index[f.key] = i
        history[i].append([key, "pending", ""])
        return f

    index = {}
    client.subscribe_topic(_DASK_TOPIC, on_start)
    try:
        ac = as_completed([submit(i) for i in range(len(specs))], with_results=False)
        for f in ac:
            i = index[f.key]
            if f.status == "finished":
                try:
                    value = f.result()
                    history[i][-1][1:] = (["timeout", f"stopped {value['timed_out']}"]
                                          if value.get("timed_out") else ["result", ""])
                    settle(i)
                    tracker.done(i, value, noted=True)
                    continue
                except Exception as e:  # noqa: BLE001
                    reason, outcome = f"{e.__class__.__name__}: {e}", "raised"
            else:
                try:
                    f.result()
                    reason = f"task {f.status}"
                except Exception as e:  # noqa: BLE001
                    reason = f"{e.__class__.__name__}: {e}"
                # KilledWorker: every run of it was lost with its worker; an exception the
                # task raised: its last run ended there.
                outcome = "lost" if f.status == "cancelled" or "KilledWorker" in reason \
                    else "raised"
            history[i][-1][1:] = [outcome, reason]
            settle(i)
            if tracker.failed(i, reason, noted=True):
                ac.add(submit(i))
    finally:
        client.unsubscribe_topic(_DASK_TOPIC)
    # The scheduler's own record of the events: any the subscription had not passed on yet.
    for event in client.get_events(_DASK_TOPIC):
        on_start(event)
    for i in range(len(specs)):
        settle(i)


def sweep(models, strategies=None, gpus=("a100",), steps=STEPS, scheduler=None, workers=None,
          retries=2, precision="fp32", archs=("sm_80",), backend="emulator", runner=None,
          cache_dir=None, out=None, progress=None, timeout=None, cpu_timeout=None,
          step_cpu_timeout=None, step_strategies=None):
    """Runs `steps` (plan, compile, te, verify, profile) for every model x strategy x GPU.

    models: paths or dicts {"path", "name", "dims", "bind", "shapes", "data", "rtol", "atol",
    "step_strategies"}; strategies: default all four. scheduler: None runs a process pool over
    this machine's cores (`workers` processes, default every core); a Dask scheduler address
    ("tcp://host:8786") or a dask.distributed Client runs the tasks there. retries: how many
    more times a task whose process died or that raised runs before it is reported failed.
    timeout / cpu_timeout: wall / CPU seconds a task may take; each task then runs in a process
    of its own, stopped at the limit, its unfinished rows reported with status "timeout" (not
    run again). step_cpu_timeout: {step: CPU seconds} each step may take (the same way;
    "load" is a step here). step_strategies: {step: [strategies]} limits a step to those
    strategies' tasks (a model entry's own overrides it). cache_dir: the compile cache every worker shares (a
    folder all of them see). out: a folder for sweep.json, sweep.csv and sweep.html. progress:
    called with (task, rows) as each task ends.
    Returns a SweepResult."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        from ._errors import UserError

        raise UserError(f"sweep: unknown step {unknown[0]!r} ({', '.join(STEPS)})")
    if runner is None and "profile" in steps:
        from ._model import _default_runner

        runner = _default_runner()
    mspecs = [_model_spec(m) for m in models]
    specs = [{"model": m, "strategy": s, "gpus": list(gpus), "steps": list(steps),
              "precision": precision, "archs": list(archs), "backend": backend,
              "runner": runner, "cache_dir": cache_dir, "step_strategies": step_strategies,
              "step_cpu_timeout": step_cpu_timeout}
             for m in mspecs for s in (strategies or ALL_STRATEGIES)]
    tracker = _Tracker(specs, retries, progress)
    t0 = time.perf_counter()
    if scheduler is None:
        n = workers or os.cpu_count() or 1
        where = f"{n} local processes"
        if timeout or cpu_timeout or step_cpu_timeout:
            _run_local_limited(specs, tracker, n, timeout, cpu_timeout)
        else:
            _run_local(specs, tracker, n)
    else:
        from dask.distributed import Client

        client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        where = f"Dask cluster {client.scheduler.address}"
        try:
            _run_dask(specs, tracker, client, timeout, cpu_timeout)
        finally:
            if client is not scheduler:
                client.close()
    rows = [r for rs in tracker.results for r in rs]
    result = SweepResult(rows, tracker.tasks, time.perf_counter() - t0, where)
    if out:
        result.write(out)
    return result


def load_manifest(path):
    """A sweep manifest: {"models": [...], "strategies": [...], "gpus": [...], "steps": [...],
    ...any other sweep() argument}; model paths relative to the manifest's folder."""
    with open(path, encoding="utf-8") as f:
        m = json.load(f)
    base = os.path.dirname(os.path.abspath(path))
    m["models"] = [_model_spec(x, base) for x in m.get("models", [])]
    for key in ("data",):
        for x in m["models"]:
            if key in x and not os.path.isabs(x[key]):
                x[key] = os.path.normpath(os.path.join(base, x[key]))
    return m


def main(argv=None):
    ap = argparse.ArgumentParser(prog="souffle-cli sweep",
                                 description="plan, compile, verify and profile every model x "
                                             "strategy x GPU of a manifest")
    ap.add_argument("manifest", help="JSON: {models, strategies, gpus, steps, ...}")
    ap.add_argument("--scheduler", help="a Dask scheduler address (default: local processes)")
    ap.add_argument("--workers", type=int, help="local processes (default: every core)")
    ap.add_argument("--steps", help="comma-separated: plan,compile,te,verify,profile")
    ap.add_argument("--retries", type=int, help="runs again of a lost or crashed task (2)")
    ap.add_argument("--cache-dir", help="the compile cache every worker shares")
    ap.add_argument("--timeout", type=float, help="wall seconds a task may take (then: timeout)")
    ap.add_argument("--cpu-timeout", type=float, help="CPU seconds a task may take")
    ap.add_argument("--out", default="sweep-results", help="folder for sweep.json/.csv/.html")
    ap.add_argument("--json", action="store_true", help="print sweep.json on stdout")
    a = ap.parse_args(argv)
    from ._errors import UserError

    try:
        m = load_manifest(a.manifest)
    except (OSError, ValueError) as e:
        print(f"error: {a.manifest}: {e}", file=sys.stderr)
        return 2
    opts = {k: v for k, v in m.items() if k != "models"}
    if a.steps:
        opts["steps"] = a.steps.split(",")
    for k in ("scheduler", "workers", "retries", "cache_dir", "timeout", "cpu_timeout"):
        if getattr(a, k) is not None:
            opts[k] = getattr(a, k)

    def said(task, rows):
        bad = sum(r["status"] != "ok" for r in rows)
        print(f"{task['model']} {task['strategy']}: {task['status']}"
              f"{f', {bad} rows failed' if bad else ''} (attempts {task['attempts']})",
              file=sys.stderr)

    try:
        r = sweep(m["models"], out=a.out, progress=said, **opts)
    except (UserError, TypeError) as e:
        print(f"error: {a.manifest}: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(r.to_json(), end="")
    print(f"sweep: {len(r.rows)} rows, {len(r.failed)} failed, {r.wall_s:.1f} s on {r.where}; "
          f"wrote {a.out}/sweep.json, sweep.csv, sweep.html", file=sys.stderr)
    return 0 if r.ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--task":
        sys.exit(_task_main(float(sys.argv[2])))
    sys.exit(main())
