"""Sweeps on a local Dask cluster of 2 worker processes: the sample models x 4 strategies with
one worker killed while it runs a task (the task re-run elsewhere, its lost run counted as an
attempt, the summary complete), tasks past their wall-clock or CPU limit reported, and a task
that kills every worker it runs on reported failed with each lost run counted."""

import csv
import json
import os
import signal
import threading
import time

import souffle
from conftest import SAMPLES, need, sample


def _local_dask(monkeypatch, config=None, **env):
    """A local Dask cluster of 2 worker processes (1 thread each) started with `env` set and
    the Dask `config` given to its scheduler."""
    distributed = need("distributed", "python3-distributed")
    import dask

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with dask.config.set(config or {}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    return cluster, distributed.Client(cluster)


def test_dask_cluster_loses_a_worker(tmp_path, monkeypatch):
    models = [sample(m) for m in SAMPLES]
    # The first task to start holds its worker (sleeps) until this test kills that worker.
    hold = tmp_path / "held"
    cluster, client = _local_dask(monkeypatch, SOUFFLE_SWEEP_HOLD_ONCE=str(hold))
    killed = {}

    def killer():
        for _ in range(600):
            if hold.exists():
                break
            time.sleep(0.05)
        else:
            return
        pid = int(hold.read_text())
        addr = next(a for a, p in pids.items() if p == pid)
        killed.update(pid=pid, addr=addr, keys=set(client.processing()[addr]))
        os.kill(pid, signal.SIGKILL)

    try:
        pids = client.run(os.getpid)
        t = threading.Thread(target=killer, daemon=True)
        t.start()
        r = souffle.sweep(models, steps=["plan"], scheduler=client, out=str(tmp_path))
        t.join(timeout=5)
    finally:
        client.close()
        cluster.close()
    assert killed, "no worker was killed"
    assert len(r.rows) == len(SAMPLES) * 4 and r.ok, r.failed
    # Every task the killed worker held ran to the end in another process.
    by_key = {f"{t['model']}-{t['strategy']}": t for t in r.tasks}
    held = [by_key[k.split("souffle-", 1)[1].rsplit("-", 2)[0]] for k in killed["keys"]]
    assert held and all(t["status"] == "ok" for t in held)
    assert all(not t["worker"].endswith(f":{killed['pid']}") for t in held)
    # The task it was running: two attempts, the first lost with the worker; tasks it held
    # without running them yet, and every other task, one.
    lost = [t for t in r.tasks if t["lost"]]
    assert len(lost) == 1 and lost[0] in held, r.tasks
    assert (lost[0]["attempts"], lost[0]["lost"]) == (2, 1)
    assert lost[0]["problems"] == [f"attempt 1: lost with its worker {killed['addr']} (process "
                                   f"{killed['pid']}) while it ran; the scheduler ran it again"]
    assert all(t["attempts"] == 1 and not t["problems"] for t in r.tasks if t is not lost[0])
    summary = (tmp_path / "sweep.html").read_text()
    assert "1 of them re-run after the worker or process running them was lost " \
           "(1 executions lost)" in summary
    assert json.loads((tmp_path / "sweep.json").read_text())["tasks"] == r.tasks
    with open(tmp_path / "sweep.csv", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(SAMPLES) * 4


def test_dask_time_limits_and_a_task_that_kills_its_worker(tmp_path, monkeypatch):
    # On 2 Dask worker processes: lstm's tasks sleep in plan, resnext's spin there, bert's kill
    # their worker; the scheduler gives up on a task after the first worker it kills.
    cluster, client = _local_dask(monkeypatch, {"distributed.scheduler.allowed-failures": 0},
                                  SOUFFLE_SWEEP_HANG="lstm:plan",
                                  SOUFFLE_SWEEP_SPIN="resnext:plan", SOUFFLE_SWEEP_CRASH="bert")
    try:
        # A wall-clock limit: lstm's task is stopped after 3 s and reported, mmoe's complete.
        r = souffle.sweep([sample("mmoe"), sample("lstm")], strategies=["rules", "souffle"],
                          steps=["plan"], scheduler=client, timeout=3, out=str(tmp_path))
        assert r.wall_s < 20
        assert [(x["model"], x["strategy"], x["status"], x["failed_step"]) for x in r.rows] == [
            ("mmoe", "rules", "ok", ""), ("mmoe", "souffle", "ok", ""),
            ("lstm", "rules", "timeout", "plan"), ("lstm", "souffle", "timeout", "plan")]
        assert all("time limit of 3 s in step plan" in x["error"] for x in r.failed)
        assert [(t["status"], t["attempts"]) for t in r.tasks] == [
            ("ok", 1), ("ok", 1), ("timeout", 1), ("timeout", 1)]
        assert r.rows[0]["kernels"] > 0
        assert "2 past their time limit" in (tmp_path / "sweep.html").read_text()
        # A CPU limit: resnext's task is stopped after 1 CPU second, mmoe's completes.
        r = souffle.sweep([sample("resnext"), sample("mmoe")], strategies=["rules"],
                          steps=["plan"], scheduler=client, cpu_timeout=1)
        assert [(x["model"], x["status"], x["failed_step"]) for x in r.rows] == [
            ("resnext", "timeout", "plan"), ("mmoe", "ok", "")]
        assert "CPU limit of 1 s" in r.rows[0]["error"]
        # bert's task kills its worker: the scheduler gives up (KilledWorker), the sweep runs
        # it once more (retries=1), it kills another: 2 attempts, both lost, reported failed.
        r = souffle.sweep([sample("bert")], strategies=["rules"], steps=["plan"],
                          scheduler=client, retries=1)
        assert [(t["status"], t["attempts"], t["lost"]) for t in r.tasks] == [("failed", 2, 2)]
        assert "gave up after 2 attempts, 2 lost with their process: KilledWorker" in \
            r.rows[0]["error"], r.rows[0]
        problems = r.tasks[0]["problems"]
        assert [p.split(":")[0] for p in problems if p.startswith("attempt")] == [
            "attempt 1", "attempt 2"]
        assert all("lost with its worker tcp://" in p for p in problems if
                   p.startswith("attempt")), problems
    finally:
        client.close()
        cluster.close()
