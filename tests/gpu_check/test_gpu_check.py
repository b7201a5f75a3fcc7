#!/usr/bin/env python3
"""The device check's Python on answers a GPU may give: NaN outputs, a report section the data
breaks, a runner killed mid-answer, a step that raises, a hello with the device's spec; the
environments of the check's Python steps and binaries; the ONNX exporter's fallback."""

import argparse
import inspect
import json
import math
import os
import shutil
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gpu_check  # noqa: E402
import onnx_export  # noqa: E402


def profile(strategy, outputs, **extra):
    r = {"strategy": strategy, "size": "sample", "model_name": "mmoe", "kernels": [], "est_total_us": 10.0,
         "kernels_us": 5.0, "end_to_end_us": 6.0, "graph_us": 4.0, "timer": "cupti", "gpu_time": True,
         "outputs": outputs, "verified": all(o.get("ok") for o in outputs)}
    r.update(extra)
    return r


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpu_check_test_")
        self.pack = os.path.join(self.dir, "pack")
        os.makedirs(os.path.join(self.pack, "bin"))
        os.makedirs(os.path.join(self.pack, "lib"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, replay=None, **kw):
        args = argparse.Namespace(pack=self.pack, out=os.path.join(self.dir, "out"), quick=False, dry_run=True,
                                  replay=replay, budget=100, runs=3, models=None, no_torch=True)
        for k, v in kw.items():
            setattr(args, k, v)
        os.makedirs(args.out, exist_ok=True)
        return gpu_check.Check(args)

    def answer(self, folder, key, **a):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, key + ".json"), "w") as f:
            json.dump(a, f)


class NanOutputs(Base):
    def test_null_and_nan_strings_render(self):
        # The CLI's JSON writes a NaN error as null, the runner's as "nan".
        res = {"steps": [], "profiles": [
            profile("souffle", [{"name": "y", "rel_l2": None, "ok": False}]),
            profile("rules", [{"name": "y", "rel_l2": "nan", "ok": False}, {"name": "z", "rel_l2": 1e-6, "ok": True}]),
            profile("unfused", [{"name": "y", "rel_l2": 2e-7, "ok": True}]),
        ]}
        md = gpu_check.render(res)
        self.assertEqual(md.count("| NaN | no: an output is NaN |"), 2, md)
        self.assertIn("| 2.0e-07 | yes |", md)
        self.assertNotIn("could not be written", md)

    def test_max_rel(self):
        self.assertTrue(math.isnan(gpu_check.max_rel([{"rel_l2": None}, {"rel_l2": 1.0}])))
        self.assertTrue(math.isnan(gpu_check.max_rel([{"rel_l2": "nan"}])))
        self.assertEqual(gpu_check.max_rel([{"rel_l2": 1e-3}, {"rel_l2": 2e-3}]), 2e-3)
        self.assertEqual(gpu_check.max_rel([]), 0.0)

    def test_counters_with_nan_times(self):
        k = {"name": "k0", "time_us": {"median": None}, "dram_read_bytes": 100, "dram_write_bytes": 50,
             "achieved_occupancy": "nan", "est_dram_bytes": None}
        res = {"steps": [], "profiles": [profile("souffle", [], kernels=[k])]}
        md = gpu_check.render(res)
        self.assertIn("| sample mmoe | souffle | 1 of 1 |", md)
        self.assertNotIn("could not be written", md)

    def test_a_section_the_data_breaks_leaves_the_others(self):
        res = {"steps": [{"step": "runner starts", "status": "ok", "seconds": 0.1}],
               "profiles": [{"strategy": "souffle", "kernels": 7}],  # not a list: a malformed answer
               "calibration": {"launch_overhead_us": 3.0, "grid_barrier": [{"blocks": 132, "us": None}]}}
        md = gpu_check.render(res)
        self.assertIn("(profiles could not be written: TypeError", md)
        self.assertIn("| runner starts | ok | 0.1 |", md)
        self.assertIn("Calibration: launch 3.00 us", md)


class Steps(Base):
    def test_a_step_that_raises_is_a_row_and_the_results_are_written(self):
        c = self.check()

        def broken(name):
            raise KeyError("strategies")

        c.step("sample mmoe profile", broken)
        self.assertEqual(c.res["steps"][-1]["status"], "failed")
        self.assertIn("the check itself failed here: KeyError", c.res["steps"][-1]["detail"])
        with open(os.path.join(c.out, "results.md")) as f:
            self.assertIn("| sample mmoe profile | failed |", f.read())
        with open(os.path.join(c.out, "results.json")) as f:
            self.assertEqual(json.load(f)["steps"][-1]["step"], "sample mmoe profile")

    def test_calibrate_answer_cut_mid_line(self):
        replay = os.path.join(self.dir, "answers")
        self.answer(replay, "calibrate", rc=-9, stdout_lines=[
            '{"id":1,"ok":true,"backend":"cuda"}', '{"event":"calibrate","phase":"launch"}',
            '{"id":2,"ok":true,"calibration":{"launch_overhead_us":3.1,"grid_bar'], stderr="")
        c = self.check(replay=replay)
        c.step("calibrate", c.calibrate)
        row = c.res["steps"][-1]
        self.assertEqual(row["status"], "failed")
        self.assertIn("the runner exited -9 without an answer to calibrate", row["detail"])
        self.assertIn("line 3 is not JSON", row["detail"])
        self.assertIsNone(c.res["calibration"])

    def test_calibrate_answer_beside_a_stray_line(self):
        replay = os.path.join(self.dir, "answers")
        self.answer(replay, "calibrate", rc=0, stdout_lines=[
            "warning: something on stdout", '{"id":2,"ok":true,"calibration":{"launch_overhead_us":3.1}}'])
        c = self.check(replay=replay)
        c.step("calibrate", c.calibrate)
        self.assertEqual(c.res["steps"][-1]["status"], "ok")
        self.assertEqual(c.res["calibration"]["launch_overhead_us"], 3.1)

    def test_no_recorded_answer_is_skipped(self):
        c = self.check(replay=os.path.join(self.dir, "none"))
        c.step("calibrate", c.calibrate)
        c.step("sample bert profile", c.profile, "sample", "bert", "x.onnx", "all", "grid", [], 3)
        self.assertEqual([s["status"] for s in c.res["steps"]], ["skipped", "skipped"])

    def test_hello_gives_the_spec_file_the_compiles_use(self):
        c = self.check(replay=gpu_check.DEFAULT_REPLAY)
        c.step("runner hello", c.hello)
        self.assertEqual(c.res["steps"][-1]["status"], "ok", c.res["steps"][-1])
        self.assertEqual(c.arch, "sm_90")
        self.assertEqual(c.res["spec"]["sm_count"], 114)
        self.assertEqual(c.gpu_args(), ["--gpu", c.spec_file, "--arch", "sm_90"])
        with open(c.spec_file) as f:
            spec = json.load(f)
        self.assertEqual(spec["gpus"][0]["name"], "H100 PCIe")

    def test_no_device_skips_the_device_steps(self):
        replay = os.path.join(self.dir, "answers")
        self.answer(replay, "hello", rc=0, stdout_lines=[json.dumps(
            {"id": 1, "ok": True, "backend": "cuda", "devices": [], "unavailable": "no CUDA device"})])
        c = self.check(replay=replay)
        c.step("runner hello", c.hello)
        c.step("calibrate", c.calibrate)
        self.assertEqual([s["status"] for s in c.res["steps"]], ["failed", "skipped"])
        self.assertIn("no CUDA device", c.res["steps"][0]["detail"])


class Timelines(Base):
    """profile --timeline on the device: the recorded answer (tests/gpu_check/answers/) becomes the
    per-stage CSV, the grid-barrier wait totals and the overhead against the plain profile."""

    def test_the_timeline_answer_gives_tables_waits_and_overhead(self):
        c = self.check(replay=gpu_check.DEFAULT_REPLAY)
        c.res["profiles"].append(profile("souffle", [], kernels_us=12.3, backend="cuda", sync="grid"))
        c.step("sample mmoe souffle --timeline", c.profile_timeline, "sample", "mmoe", "x.onnx", 5)
        row = c.res["steps"][-1]
        self.assertEqual(row["status"], "ok", row)
        self.assertIn("instrumented 13.10 us vs plain 12.30 us (+6.5%)", row["detail"])
        e = c.res["timelines"][-1]
        self.assertTrue(e["gpu_time"])
        self.assertAlmostEqual(e["overhead_pct"], 100 * (13.1 / 12.3 - 1))
        with open(os.path.join(gpu_check.DEFAULT_REPLAY, "profile-sample-mmoe-souffle-grid-timeline.json")) as f:
            k = json.load(f)["stdout_json"]["strategies"][0]["timeline"]["kernels"][0]
        grid = [w for w in k["waits"] if w["kind"] == "grid_barrier"]
        self.assertGreater(len(grid), 0)
        self.assertEqual(e["kernels"][0]["grid_barriers"], len(grid))
        self.assertAlmostEqual(e["kernels"][0]["grid_wait_us"], sum(w["total_us"] for w in grid))
        with open(os.path.join(c.out, "timeline", "sample-mmoe.stages.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(len(rows), 1 + len(k["stages"]))
        self.assertTrue(rows[0].startswith("kernel,stage,name,template,"))
        self.assertTrue(all(r.endswith(",gpu") for r in rows[1:]))
        with open(os.path.join(c.out, "timeline", "grid_barrier_waits.csv")) as f:
            waits = f.read().splitlines()
        self.assertEqual(len(waits), 2)
        self.assertIn("sample,mmoe,kernel0,gpu,%d," % len(grid), waits[1])
        with open(os.path.join(c.out, "results.md")) as f:
            md = f.read()
        self.assertIn("| sample mmoe | GPU | kernel0 |", md)
        self.assertIn("13.10 vs 12.30 (+6.5%)", md)

    def test_no_plain_profile_and_no_answer(self):
        c = self.check(replay=gpu_check.DEFAULT_REPLAY)
        c.step("t", c.profile_timeline, "sample", "mmoe", "x.onnx", 5)
        self.assertIn("no plain profile of the plan to compare with", c.res["steps"][-1]["detail"])
        self.assertIsNone(c.res["timelines"][-1]["overhead_pct"])
        c.step("t2", c.profile_timeline, "sample", "bert", "x.onnx", 5)
        self.assertEqual(c.res["steps"][-1]["status"], "skipped")
        c.step("cal", c.calibrate_from_timelines)  # the replayed answer's document is not here
        self.assertEqual(c.res["steps"][-1]["status"], "skipped")

    def test_an_answer_without_a_timeline_fails_its_row(self):
        replay = os.path.join(self.dir, "answers")
        self.answer(replay, "profile-sample-mmoe-souffle-grid-timeline", rc=0,
                    stdout_json={"strategies": [profile("souffle", [])]})
        c = self.check(replay=replay)
        c.step("t", c.profile_timeline, "sample", "mmoe", "x.onnx", 5)
        self.assertEqual(c.res["steps"][-1]["status"], "failed")
        self.assertIn("no timeline in the answer", c.res["steps"][-1]["detail"])


class Environments(Base):
    def test_python_steps_never_see_the_pack(self):
        lib = os.path.join(self.pack, "lib")
        base = {"LD_LIBRARY_PATH": lib + ":/usr/lib/x:" + self.pack + "/lib/", "PATH": self.pack + "/bin:/usr/bin",
                "LD_PRELOAD": lib + "/libprotobuf.so", "HOME": "/root"}
        env = gpu_check.python_env(self.pack, base)
        self.assertEqual(env["LD_LIBRARY_PATH"], "/usr/lib/x")
        self.assertEqual(env["PATH"], "/usr/bin")
        self.assertNotIn("LD_PRELOAD", env)
        self.assertEqual(env["HOME"], "/root")
        for v in env.values():
            self.assertNotIn(self.pack, v)

    def test_binaries_find_the_pack_by_their_run_path_not_the_environment(self):
        env = gpu_check.binary_env(self.pack, {"LD_LIBRARY_PATH": os.path.join(self.pack, "lib")})
        self.assertFalse(gpu_check.names_pack(env.get("LD_LIBRARY_PATH", ""), self.pack))

    def test_names_pack(self):
        self.assertTrue(gpu_check.names_pack("/a:" + self.pack + "/lib", self.pack))
        self.assertFalse(gpu_check.names_pack("/a:" + self.pack + "x/lib", self.pack))


class FakeOnnx:
    def __init__(self, refuse_torchscript=True, refuse_dynamo=False, has_dynamo=True):
        self.calls = []
        self.refuse = (refuse_torchscript, refuse_dynamo)
        outer = self

        if has_dynamo:
            def export(model, args, f, export_params=True, opset_version=None, training=None, dynamo=True, **kw):
                outer.calls.append({"dynamo": dynamo, "opset_version": opset_version, "training": training})
                if (not dynamo and outer.refuse[0]) or (dynamo and outer.refuse[1]):
                    raise RuntimeError("TorchScript-based ONNX export is no longer supported" if not dynamo else "boom")
        else:
            def export(model, args, f, export_params=True, opset_version=None, training=None, **kw):
                outer.calls.append({"opset_version": opset_version})
        self.export = export


class Exporter(unittest.TestCase):
    def torch(self, onnx):
        return types.SimpleNamespace(onnx=onnx, __version__="9.9")

    def test_torchscript_where_it_is_there(self):
        onnx = FakeOnnx(refuse_torchscript=False)
        self.assertEqual(onnx_export.export(self.torch(onnx), None, (), "m.onnx", opset_version=17), ("torchscript", ""))
        self.assertEqual(onnx.calls, [{"dynamo": False, "opset_version": 17, "training": None}])

    def test_falls_back_to_dynamo_and_says_so(self):
        onnx = FakeOnnx()
        exporter, note = onnx_export.export(self.torch(onnx), None, (), "m.onnx", opset_version=17, training="EVAL")
        self.assertEqual(exporter, "dynamo")
        self.assertIn("refused in PyTorch 9.9 (RuntimeError: TorchScript-based ONNX export is no longer supported)", note)
        self.assertIn("opset 18", note)
        self.assertEqual(onnx.calls[1], {"dynamo": True, "opset_version": 18, "training": None})

    def test_both_refusing_names_both(self):
        with self.assertRaises(RuntimeError) as e:
            onnx_export.export(self.torch(FakeOnnx(refuse_dynamo=True)), None, (), "m.onnx", opset_version=17)
        self.assertIn("TorchScript-based exporter refused", str(e.exception))
        self.assertIn("boom", str(e.exception))

    def test_a_pytorch_before_dynamo(self):
        onnx = FakeOnnx(has_dynamo=False)
        self.assertNotIn("dynamo", inspect.signature(onnx.export).parameters)
        self.assertEqual(onnx_export.export(self.torch(onnx), None, (), "m.onnx", opset_version=17), ("torchscript", ""))


if __name__ == "__main__":
    unittest.main()
