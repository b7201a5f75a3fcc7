"""The souffle module against the command line: the same plans, compiles and verdicts, its errors,
its edits, its notebook drawings."""

import json
import os
import re
import threading
import time

import numpy as np
import pytest

import subprocess

import souffle
from conftest import CLI, SAMPLES, cli_json, sample


def without_times(text):
    """plan --json text with the wall times blanked (the only fields that differ run to run)."""
    return re.sub(r'"(ms|load_ms)": [-0-9.e+]+', r'"\1": 0', text)


# Every sample model under rules and souffle; BERT under all four strategies.
CASES = [(m, s) for m in SAMPLES for s in ("rules", "souffle")] + [
    ("bert", "unfused"), ("bert", "souffle-paper")]


@pytest.mark.parametrize("name,strategy", CASES)
def test_plan_json_is_the_cli_s(models, name, strategy):
    p = models(name).plan(strategy=strategy)
    out = subprocess.run([CLI, "plan", sample(name), "--strategy", strategy, "--json", "-q"],
                         check=True, capture_output=True, text=True).stdout
    assert without_times(p.to_json()) == without_times(out)
    assert p.data["kernels"] == len(p.kernels) > 0
    assert p.prices["total"] == p.data["est_time_us"]


def test_options_reach_the_plan(models):
    p = models("bert").plan(strategy="souffle", gpu="h100", precision="fp16", sync="auto")
    want = cli_json("plan", sample("bert"), "--gpu", "h100", "--precision", "fp16", "--sync",
                    "auto")
    got = json.loads(p.to_json())
    for j in (got, want):
        j.pop("load_ms")
        j.pop("passes")
    assert got == want
    assert (p.gpu, p.precision, p.sync) == (want["gpu"], "fp16", "auto")


def test_edit_applies_and_matches_a_decisions_file(models, tmp_path):
    p = models("bert").plan(strategy="rules")
    first = p.kernels[0]
    q = p.edit(split=first.tes[-1])
    assert len(q.kernels) == len(p.kernels) + 1
    assert q.decisions()["edits"] == [{"kind": "split", "at": first.tes[-1]}]
    assert p.decisions()["edits"] == []  # the plan edited is left as it was
    path = tmp_path / "decisions.json"
    q.save_decisions(path)
    want = subprocess.run([CLI, "plan", sample("bert"), "--strategy", "rules", "--decisions",
                           str(path), "--json", "-q"], check=True, capture_output=True,
                          text=True).stdout
    assert without_times(q.to_json()) == without_times(want)
    # The same plan from the file, from the dict and from the edit.
    r = models("bert").plan(strategy="rules", decisions=str(path))
    assert without_times(r.to_json()) == without_times(q.to_json())
    c = p.compare(q)
    assert c.totals["kernels"] == (len(p.kernels), len(q.kernels), 1)
    assert "<table>" in c._repr_html_() and "+1" in c._repr_html_()


def test_refused_edit_raises_with_the_reason(models):
    p = models("bert").plan(strategy="rules")
    with pytest.raises(souffle.EditRefused) as e:
        p.edit(split=p.kernels[0].tes[0])
    assert "already starts a kernel" in e.value.reason
    assert e.value.edit.startswith("split")
    with pytest.raises(souffle.EditRefused) as e:
        p.edit(merge=(p.kernels[0].tes[0], p.kernels[-1].tes[-1]))
    assert "cycle" in e.value.reason
    with pytest.raises(souffle.EditRefused, match="unknown TE or ONNX node 'nothing'"):
        p.edit(pin="nothing")
    assert isinstance(e.value, souffle.UserError)


def test_bad_files_raise_user_error_naming_the_file(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(souffle.UserError) as e:
        souffle.load(missing)
    assert e.value.file == missing and missing in str(e.value)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a model")
    with pytest.raises(souffle.UserError) as e:
        souffle.load(str(bad))
    assert e.value.file == str(bad) and "not a valid ONNX model" in e.value.reason
    with pytest.raises(souffle.UserError) as e:
        souffle.load(b"garbage")
    assert e.value.file == "<bytes>"
    with pytest.raises(souffle.UserError, match="strategy"):
        souffle.load(sample("mmoe")).plan(strategy="fastest")


def test_load_from_bytes_plans_the_same(models):
    with open(sample("mmoe"), "rb") as f:
        m = souffle.load(f.read())
    assert m.path == "<bytes>"
    a = json.loads(m.plan().to_json())
    b = json.loads(models("mmoe").plan().to_json())
    for j in (a, b):
        j.pop("model"), j.pop("load_ms"), j.pop("passes")
    assert a == b


def test_model_graph_program_analysis(models):
    m = models("bert")
    info = cli_json("inspect", sample("bert"))
    assert (m.info["onnx_nodes"], m.info["nodes"], m.info["tes"]) == (info["onnx_nodes"],
                                                                      info["nodes"], info["tes"])
    assert len(m.graph["nodes"]) == m.info["nodes"]
    assert m.inputs[0]["name"] == "hidden_states" and m.inputs[0]["shape"] == [1, 64, 128]
    assert all(t in m.graph["tensors"] for n in m.graph["nodes"] for t in n["outputs"] if t)
    p = m.plan()
    assert p.kernels[0].tes[0].split("/")[1] in m.te_program
    a = m.analysis
    assert len(a["tes"]) == m.info["tes"] and a["total_flops"] > 0
    assert {t["kind"] for t in a["tes"]} <= {"compute-intensive", "memory-intensive"}


@pytest.mark.parametrize("name", SAMPLES)
def test_model_info_is_inspect_s(models, name):
    """The model's inputs and outputs are the ONNX graph's, as `souffle-cli inspect --json` gives
    them (names, types, shapes); the TE program's own are beside them."""
    m = models(name)
    info = cli_json("inspect", sample(name))
    assert m.inputs == info["inputs"] and m.outputs == info["outputs"]
    for k in ("onnx_nodes", "nodes", "folded", "tes", "warnings"):
        assert m.info[k] == info[k], k
    assert [o["name"] for o in m.outputs] == m.graph["outputs"]
    assert [i["name"] for i in m.inputs] == m.graph["inputs"]
    # The program computes each output under its TE's name, with the graph output's type.
    assert len(m.te_outputs) == len(m.outputs)
    assert [(t["dtype"], t["shape"]) for t in m.te_outputs] == [(o["dtype"], o["shape"])
                                                              for o in m.outputs]
    assert [t["name"] for t in m.te_inputs] == [i["name"] for i in m.inputs]


@pytest.mark.parametrize("name", SAMPLES)
def test_te_verify_is_the_cli_s(models, name):
    """The TE program against every sample model's test data, as `souffle-cli verify --level te`
    judges it: the same verdict, errors and checked outputs (the ONNX graph's outputs)."""
    v = models(name).plan(strategy="souffle").verify(level="te")
    want = cli_json("verify", sample(name), "--level", "te", "--strategy", "souffle")
    assert v.ok and want["ok"]
    assert (v.mismatches, v.max_abs) == (want["mismatches"], want["max_abs"])
    assert [(c["output"], c["elements"]) for c in v.checks] == [
        (c["output"], c["elements"]) for c in want["checks"]]
    assert {c["output"] for c in v.checks} == {o["name"] for o in models(name).outputs}


def test_verify_against_the_cli_and_numpy(models):
    m = models("mmoe")
    p = m.plan(strategy="souffle")
    v = p.verify(level="kernels")
    want = cli_json("verify", sample("mmoe"), "--level", "kernels", "--strategy", "souffle")
    assert v.ok and want["ok"]
    assert v.kernels == want["kernels"] and v.mismatches == want["mismatches"] == 0
    assert [c["output"] for c in v.checks] == [c["output"] for c in want["checks"]]
    assert p.verify(level="te").ok
    # NumPy in and out: the emulated kernels' outputs, judged by the interpreter's run.
    x = np.random.default_rng(0).standard_normal((1, 100)).astype(np.float32)
    outs = p.run(x)
    assert [o.shape for o in outs] == [(1, 1), (1, 1)] and outs[0].dtype == np.float32
    assert p.run({"features": x})[0].tolist() == outs[0].tolist()
    assert p.verify(level="te", data=([x], outs)).ok
    wrong = [outs[0] + 1.0, outs[1]]
    r = p.verify(level="kernels", data={"inputs": [x], "outputs": wrong})
    assert not r.ok and r.mismatches == 1
    with pytest.raises(souffle.UserError, match="input 0"):
        p.run(np.zeros((2, 100), np.float32))


def test_compile_matches_the_cli(models):
    p = models("mmoe").plan(strategy="souffle")
    c = p.compile(archs=["sm_80"])
    want = cli_json("compile", sample("mmoe"), "--arch", "sm_80")
    assert c.ok and c.errors == want["errors"] == 0
    assert [k["name"] for k in c.kernels] == [k["name"] for k in want["kernels"]]
    for got, w in zip(c.kernels, want["kernels"]):
        assert (got["grid"], got["block"], got["co_resident"]) == (w["grid"], w["block"],
                                                                   w["co_resident"])
        assert got["registers"] == w["per_arch"][0]["registers"]
    assert "extern \"C\"" in c.cuda["kernel0"]
    with pytest.raises(souffle.UserError, match="sm_1"):
        p.compile(archs=["sm_1"])


def test_profile_on_the_emulator(models):
    p = models("mmoe").plan(strategy="rules")
    r = p.profile(backend="emulator")
    assert r.verified, r
    assert len(r.kernels) == p.data["launches"]
    assert r.end_to_end_us > 0
    bars = r.timeline()
    assert [b[0] for b in bars] == [k["name"] for k in r.kernels]
    assert all(a <= b for _, a, b in bars) and bars == sorted(bars, key=lambda x: x[1])
    svg = r._repr_svg_()
    assert svg.count("<rect") == len(bars) and "CPU, emulator" in svg


def test_report_and_notebook_drawings(models, tmp_path):
    p = models("mmoe").plan(strategy="souffle")
    q = models("mmoe").plan(strategy="unfused")
    out = p.report(str(tmp_path / "r.html"), compare=q)
    text = open(out, encoding="utf-8").read()
    assert "<html" in text and "unfused" in text
    assert json.loads(open(p.report(str(tmp_path / "r.json")), encoding="utf-8").read())
    svg = p._repr_svg_()
    assert "<svg" in svg and "cluster" in svg
    assert "<svg" in p._repr_html_() and "1 kernels" in p._repr_html_()
    with pytest.raises(souffle.UserError, match="r.txt"):
        p.report(str(tmp_path / "r.txt"))


def test_progress_and_the_gil(models):
    steps = []
    m = souffle.load(sample("swin"), progress=steps.append)
    assert steps == ["import", "fold", "lower"]
    steps.clear()
    m.plan(strategy="souffle", progress=steps.append)
    assert steps[0] == "analyze" and "price" in steps
    # While one thread plans, another runs Python: the plan does not hold the GIL.
    done = threading.Event()
    spent = []

    def work():
        t = time.perf_counter()
        for _ in range(3):
            m.plan(strategy="souffle")
        spent.append(time.perf_counter() - t)
        done.set()

    threading.Thread(target=work).start()
    ticks = 0
    while not done.is_set():
        ticks += 1
    # Holding the GIL the planning thread would let this loop run only between its calls.
    assert ticks > 100_000, (ticks, spent)


def test_price_cache_follows_the_folder_and_can_be_turned_off(models, tmp_path, monkeypatch):
    """Plans keep what they build in the price cache of the folder SOUFFLE_CACHE_DIR names when
    each plan starts, take it back unchanged, and leave the folder alone when turned off."""
    on = tmp_path / "on"
    monkeypatch.setenv("SOUFFLE_CACHE_DIR", str(on))
    m = models("mmoe")
    # Options no other test plans with: the process's own pricer has built nothing of them yet.
    first = m.plan(strategy="souffle", gpu="h200", precision="bf16", sync="flags")
    stored = list((on / "prices").glob("*.entry"))
    assert stored
    again = m.plan(strategy="souffle", gpu="h200", precision="bf16", sync="flags")
    assert without_times(again.to_json()) == without_times(first.to_json())
    off = tmp_path / "off"
    monkeypatch.setenv("SOUFFLE_CACHE_DIR", str(off))
    souffle.price_cache(False)
    try:
        built = m.plan(strategy="souffle", gpu="h200", precision="bf16", sync="flags")
    finally:
        souffle.price_cache(True)
    assert without_times(built.to_json()) == without_times(first.to_json())
    assert not (off / "prices").exists()
