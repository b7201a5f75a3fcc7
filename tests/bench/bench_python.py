#!/usr/bin/env python3
"""The souffle Python module's costs beside the command line's, and the sweep's wall time on 1
and 2 workers. Medians (min-max) of --runs runs; the machine's cores and load before and after.

    bench_python.py plan CLI MODEL.onnx [--runs 3] [--strategy souffle]
        `souffle-cli plan MODEL --json` (a process: load, plan, print) beside a Python process
        doing souffle.load + plan + to_json, and the same load + plan inside one session
    bench_python.py sweep [--models DIR] [--skip a,b] [--steps plan] [--runs 3] [--dask]
        souffle.sweep of every model in DIR (default sample_models) x 4 strategies on local
        processes, 1 then 2 workers; with --dask also on a local Dask cluster of 1 and 2 workers

Run with the interpreter the module was built for and the build tree on PYTHONPATH:
    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_python.py plan build/app/cli/souffle-cli M
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def fmt(xs):
    return f"{statistics.median(xs):7.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return time.perf_counter() - t0


def bench_plan(a):
    import souffle

    script = ("import sys, souffle; m = souffle.load(sys.argv[1]); "
              "sys.stdout.write(m.plan(strategy=sys.argv[2]).to_json())")
    cli, py, inside = [], [], []
    for _ in range(a.runs):
        cli.append(timed([a.cli, "plan", a.model, "--strategy", a.strategy, "--json", "-q"]))
        py.append(timed([sys.executable, "-c", script, a.model, a.strategy]))
        t0 = time.perf_counter()
        souffle.load(a.model).plan(strategy=a.strategy).to_json()
        inside.append(time.perf_counter() - t0)
    print(f"plan {os.path.basename(os.path.dirname(a.model))}/{os.path.basename(a.model)} "
          f"--strategy {a.strategy}, {a.runs} runs")
    print(f"  souffle-cli plan --json (a process)     {fmt(cli)}")
    print(f"  python3: load + plan + to_json (process) {fmt(py)}")
    print(f"  in one Python session: load + plan       {fmt(inside)}")


def bench_sweep(a):
    import souffle

    folder = a.models
    skip = set(a.skip.split(",")) if a.skip else set()
    models = sorted(os.path.join(folder, d, "model.onnx") for d in os.listdir(folder)
                    if d not in skip and os.path.exists(os.path.join(folder, d, "model.onnx")))
    steps = a.steps.split(",")
    print(f"sweep of {len(models)} models x 4 strategies, steps {','.join(steps)}, {a.runs} runs")
    for n in (1, 2):
        ts = []
        for _ in range(a.runs):
            r = souffle.sweep(models, steps=steps, workers=n)
            assert len(r.rows) == len(models) * 4
            ts.append(r.wall_s)
        print(f"  local processes, {n} worker{'s' if n > 1 else ' '}       {fmt(ts)}")
    if a.dask:
        from dask.distributed import Client, LocalCluster

        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                ts = []
                for _ in range(a.runs):
                    r = souffle.sweep(models, steps=steps, scheduler=client)
                    assert len(r.rows) == len(models) * 4
                    ts.append(r.wall_s)
            print(f"  Dask LocalCluster, {n} worker{'s' if n > 1 else ' '}     {fmt(ts)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("plan")
    p.add_argument("cli")
    p.add_argument("model")
    p.add_argument("--strategy", default="souffle")
    p.add_argument("--runs", type=int, default=3)
    s = sub.add_parser("sweep")
    here = os.path.dirname(os.path.abspath(__file__))
    s.add_argument("--models", default=os.path.join(here, "..", "..", "sample_models"))
    s.add_argument("--steps", default="plan")
    s.add_argument("--skip", help="model folders to leave out, comma-separated")
    s.add_argument("--runs", type=int, default=3)
    s.add_argument("--dask", action="store_true")
    a = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {load()}")
    bench_plan(a) if a.what == "plan" else bench_sweep(a)
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
