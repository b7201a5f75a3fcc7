"""Sweeps: every step on this machine's processes, tasks whose process dies run again and are
then reported, time limits, a failing model, the command line (test_sweep_dask.py: on Dask)."""

import csv
import json
import os
import subprocess

import souffle
from conftest import CLI, sample


def test_every_step_locally(tmp_path):
    cache = str(tmp_path / "cache")
    r = souffle.sweep([sample("mmoe")], strategies=["rules", "souffle"], workers=2,
                      archs=["sm_80"], out=str(tmp_path), cache_dir=cache)
    assert r.ok, r.failed
    assert all(x["compiles_from_cache"] == 0 < x["compiles"] for x in r.rows)
    # Another sweep's workers take every kernel from the shared compile cache.
    again = souffle.sweep([sample("mmoe")], strategies=["rules", "souffle"], workers=2,
                          archs=["sm_80"], steps=["plan", "compile"], cache_dir=cache)
    assert all(x["compiles_from_cache"] == x["compiles"] > 0 for x in again.rows), again.rows
    assert [(x["model"], x["strategy"]) for x in r.rows] == [("mmoe", "rules"),
                                                            ("mmoe", "souffle")]
    want = souffle.load(sample("mmoe")).plan(strategy="rules").data
    row = r.rows[0]
    assert (row["kernels"], row["est_time_us"]) == (want["kernels"], want["est_time_us"])
    assert row["compile_errors"] == 0 and row["verified"] and row["end_to_end_us"] > 0
    assert row["profile_device"] == "CPU emulator"
    with open(tmp_path / "sweep.csv", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 2
    assert json.loads((tmp_path / "sweep.json").read_text())["rows"] == r.rows
    assert "2 ok, 0 failed" in (tmp_path / "sweep.html").read_text()


def test_dead_processes_are_retried_then_reported(tmp_path, monkeypatch):
    models = [sample(m) for m in ("bert", "mmoe", "lstm")]
    # One process dies once: its task runs again alone and every row comes back.
    monkeypatch.setenv("SOUFFLE_SWEEP_CRASH_ONCE", str(tmp_path / "crashed"))
    r = souffle.sweep(models, strategies=["rules", "souffle"], steps=["plan"], workers=2)
    assert r.ok and len(r.rows) == 6
    assert any("died" in p for t in r.tasks for p in t["problems"])
    # Every process running mmoe dies: after 1 + 1 attempts its tasks are reported failed,
    # the others are complete.
    monkeypatch.delenv("SOUFFLE_SWEEP_CRASH_ONCE")
    monkeypatch.setenv("SOUFFLE_SWEEP_CRASH", "mmoe")
    r = souffle.sweep(models, strategies=["rules", "souffle"], steps=["plan"], workers=2,
                      retries=1)
    assert len(r.rows) == 6
    assert [(x["model"], x["strategy"]) for x in r.failed] == [("mmoe", "rules"),
                                                              ("mmoe", "souffle")]
    # Each ran first in the shared pool (lost with it, not charged), then twice alone.
    assert all("gave up after 3 attempts, 1 lost with their process" in x["error"]
               for x in r.failed), r.failed
    assert [(t["attempts"], t["lost"]) for t in r.tasks if t["model"] == "mmoe"] == [(3, 1)] * 2
    assert all(x["status"] == "ok" for x in r.rows if x["model"] != "mmoe")
    assert "2 failed" in r.to_html()


def test_tasks_past_their_time_limit_are_reported(tmp_path, monkeypatch):
    models = [sample("mmoe"), sample("lstm")]
    # lstm's tasks sleep in their verify step: each is stopped after 3 wall seconds and reported
    # as timed out where it was, with the plan figures it had; the sweep itself does not hang.
    monkeypatch.setenv("SOUFFLE_SWEEP_HANG", "lstm:verify")
    r = souffle.sweep(models, strategies=["rules"], gpus=["a100", "h100"],
                      steps=["plan", "verify"], workers=2, timeout=3, out=str(tmp_path))
    assert r.wall_s < 30
    assert [(x["model"], x["gpu"], x["status"], x["failed_step"]) for x in r.rows] == [
        ("mmoe", "a100", "ok", ""), ("mmoe", "h100", "ok", ""),
        ("lstm", "a100", "timeout", "verify"), ("lstm", "h100", "timeout", "")]
    late = r.rows[2]
    assert "time limit of 3 s in step verify" in late["error"] and late["kernels"] > 0
    assert "not run" in r.rows[3]["error"]
    assert not r.ok and [t["status"] for t in r.tasks] == ["ok", "timeout"]
    assert r.tasks[1]["attempts"] == 1  # not run again: it would stop there again
    assert "2 past their time limit" in (tmp_path / "sweep.html").read_text()
    # A CPU limit: mmoe's task spins in its plan step and is stopped after 1 CPU second.
    monkeypatch.delenv("SOUFFLE_SWEEP_HANG")
    monkeypatch.setenv("SOUFFLE_SWEEP_SPIN", "mmoe:plan")
    r = souffle.sweep(models, strategies=["rules"], steps=["plan"], workers=2, cpu_timeout=1)
    assert [(x["model"], x["status"], x["failed_step"]) for x in r.rows] == [
        ("mmoe", "timeout", "plan"), ("lstm", "ok", "")]
    assert "CPU limit of 1 s" in r.rows[0]["error"]
    # A step's own CPU limit: lstm's task spins in verify, past its 1 CPU second there, after
    # a plan within that step's 30.
    monkeypatch.setenv("SOUFFLE_SWEEP_SPIN", "lstm:verify")
    r = souffle.sweep(models, strategies=["rules"], steps=["plan", "verify"], workers=2,
                      step_cpu_timeout={"plan": 30, "verify": 1})
    assert [(x["model"], x["status"], x["failed_step"]) for x in r.rows] == [
        ("mmoe", "ok", ""), ("lstm", "timeout", "verify")]
    assert "CPU limit of 1 s for step verify" in r.rows[1]["error"] and r.rows[1]["kernels"] > 0


def test_a_model_that_fails_is_a_row_not_a_retry(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    r = souffle.sweep([str(bad), sample("mmoe")], strategies=["rules"], steps=["plan"],
                      workers=2)
    assert [x["status"] for x in r.rows] == ["failed", "ok"]
    assert r.rows[0]["failed_step"] == "load" and "not a valid ONNX model" in r.rows[0]["error"]
    assert r.tasks[0]["attempts"] == 1


def test_cli_sweep_runs_a_manifest(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "models": [os.path.relpath(sample("mmoe"), tmp_path)],
        "strategies": ["unfused", "souffle"], "steps": ["plan", "verify"], "workers": 2}))
    out = tmp_path / "out"
    p = subprocess.run([CLI, "sweep", str(manifest), "--out", str(out)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(x["strategy"], x["status"], x["verified"]) for x in rows] == [
        ("unfused", "ok", True), ("souffle", "ok", True)]
    p = subprocess.run([CLI, "sweep", str(tmp_path / "missing.json")], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "missing.json" in p.stderr
    # --timeout: the tasks sleeping in verify are stopped and reported; exit 1.
    p = subprocess.run([CLI, "sweep", str(manifest), "--out", str(out), "--timeout", "2"],
                       capture_output=True, text=True,
                       env=dict(os.environ, SOUFFLE_SWEEP_HANG="mmoe:verify"))
    assert p.returncode == 1, p.stderr
    rows = json.loads((out / "sweep.json").read_text())["rows"]
    assert [(x["status"], x["failed_step"]) for x in rows] == [("timeout", "verify")] * 2
