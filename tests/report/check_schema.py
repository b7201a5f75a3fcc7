#!/usr/bin/env python3
"""Validates the JSON report of every sample model (every strategy, a comparison and a decisions
file) against docs/report.schema.json with a JSON Schema validator, and checks that the JSON says
what the HTML and CSV of the same report say (kernel counts and estimated totals)."""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("check_schema: the jsonschema module is missing (scripts/setup.sh installs "
             "python3-jsonschema)")


def report(cli, model, out, *extra):
    r = subprocess.run([cli, "report", model, "--out", out, *extra], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"check_schema: report {model} {' '.join(extra)} exited {r.returncode}:\n"
                 f"{r.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--source", required=True, help="the source tree")
    a = ap.parse_args()
    with open(a.schema) as f:
        schema = json.load(f)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    models = sorted(glob.glob(os.path.join(a.source, "sample_models", "*", "model.onnx")))
    if not models:
        sys.exit("check_schema: no sample models found")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for m in models:
            name = os.path.basename(os.path.dirname(m))
            runs.append((m, name + "-all", ["--strategy", "all"]))
        bert = os.path.join(a.source, "sample_models", "bert", "model.onnx")
        runs.append((bert, "bert-compare", ["--strategy", "rules", "--compare", "souffle"]))
        runs.append((bert, "bert-decisions",
                     ["--decisions", os.path.join(a.source, "tests", "report", "bert_split.json")]))
        # Measured times beside the estimates (what a profile run would hand in).
        measured = os.path.join(tmp, "measured.json")
        with open(measured, "w") as f:
            json.dump({"device": "NVIDIA H200", "driver": "13.0", "date": "2026-01-01T00:00:00Z",
                       "strategy": "rules",
                       "kernels": [{"kernel": 0, "time_us": 3.25}, {"kernel": 1, "time_us": 2.5}]},
                      f)
        runs.append((bert, "bert-measured", ["--strategy", "all", "--measurements", measured]))
        # A timeline recorded by profile on the emulator, shown per kernel (docs/timeline.md).
        mmoe = os.path.join(a.source, "sample_models", "mmoe", "model.onnx")
        tl_dir = os.path.join(tmp, "timeline")
        r = subprocess.run([a.cli, "profile", mmoe, "--backend", "emulator", "--timeline",
                            "--timeline-dir", tl_dir], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"check_schema: profile --timeline exited {r.returncode}:\n{r.stderr}")
        runs.append((mmoe, "mmoe-timeline", ["--timeline", tl_dir]))
        for model, tag, extra in runs:
            out = os.path.join(tmp, tag + ".json")
            report(a.cli, model, out, *extra)
            with open(out) as f:
                doc = json.load(f)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
            for e in errors[:10]:
                print(f"{tag}: {'/'.join(str(p) for p in e.path)}: {e.message}")
            failures += len(errors)
            # The validator must also say no: a report of a future version and a kernel
            # without its estimate are refused.
            bad = json.loads(json.dumps(doc))
            bad["schema_version"] = 2
            del bad["plans"][0]["partitions"][0]["estimate"]
            if len(list(validator.iter_errors(bad))) < 2:
                print(f"{tag}: the validator accepted a broken report")
                failures += 1
            # The CSV of the same report has one row per kernel per plan with the same figures.
            csv_out = os.path.join(tmp, tag + ".csv")
            report(a.cli, model, csv_out, *extra)
            with open(csv_out, newline="") as f:
                rows = list(csv.DictReader(f))
            kernels = sum(len(p["partitions"]) for p in doc["plans"])
            if len(rows) != kernels:
                print(f"{tag}: CSV has {len(rows)} rows, JSON {kernels} kernels")
                failures += 1
            for p in doc["plans"]:
                total = sum(float(r["est_time_us"]) for r in rows if r["plan"] == p["label"])
                if abs(total - p["est_time_us"]) > 1e-3 * max(1.0, p["est_time_us"]):
                    print(f"{tag}: {p['label']}: CSV total {total} µs, JSON {p['est_time_us']}")
                    failures += 1
                launches = sum(len(k["launches"]) for k in p["partitions"])
                if launches != p["launches"] or any(
                        not l["cuda"] and "error" not in l for k in p["partitions"]
                        for l in k["launches"]):
                    print(f"{tag}: {p['label']}: launches without CUDA")
                    failures += 1
            if tag.endswith("-timeline") and not any(
                    k.get("timeline") for p in doc["plans"] for k in p["partitions"]):
                print(f"{tag}: no kernel has its timeline")
                failures += 1
            print(f"{tag}: {len(doc['plans'])} plans, {kernels} kernels, "
                  f"{'valid' if not errors else str(len(errors)) + ' schema errors'}")
    if failures:
        sys.exit(f"check_schema: {failures} problems")
    print(f"check_schema: {len(runs)} reports valid against {os.path.basename(a.schema)}")


if __name__ == "__main__":
    main()
