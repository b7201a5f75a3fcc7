"""`pip install ./python` (scikit-build-core over the repository's CMake project) pointed at this
build tree (SOUFFLE_PREBUILT): the wheel is made from the built core libraries, programs and
extension, installed into a folder, and the package works from there alone."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import SOURCE, sample

BUILD = os.environ.get("SOUFFLE_BUILD_DIR", os.path.join(SOURCE, "build"))
# scripts/setup.sh installs scikit-build-core here (Debian 12 does not package it).
BACKEND = os.path.join(BUILD, "tools", "python")


def _backend_env():
    env = dict(os.environ, PYTHONPATH=BACKEND, PYTHONDONTWRITEBYTECODE="1")
    probe = subprocess.run([sys.executable, "-c", "import scikit_build_core"], env=env,
                           capture_output=True, text=True)
    if probe.returncode != 0:
        if os.environ.get("SOUFFLE_SETUP_RAN") == "1":
            pytest.fail(f"scikit-build-core does not import from {BACKEND}: scripts/setup.sh "
                        f"installs it there ({probe.stderr.strip()[-200:]})")
        pytest.skip(f"scikit-build-core is not in {BACKEND} (scripts/setup.sh installs it)")
    return env


def test_pip_install_against_the_build_tree(tmp_path):
    env = _backend_env()
    target = tmp_path / "site"
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
         "--no-index", "--target", str(target),
         f"--config-settings=cmake.define.SOUFFLE_PREBUILT={BUILD}",
         "--config-settings=cmake.define.SOUFFLE_PREBUILT_EXTENSION=ON",
         os.path.join(SOURCE, "python")],
        env=env, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    pkg = target / "souffle"
    assert (pkg / "bin" / "souffle-cli").exists() and (pkg / "bin" / "souffle-runner").exists()
    assert list(pkg.glob("_core.*.so")) and (pkg / "sweep.py").exists()

    # The installed package alone (not the build tree's) plans, verifies and profiles with
    # the runner it carries, and its plan is the build tree's CLI's.
    script = f"""
import json, os, souffle
from souffle._model import _default_runner
assert souffle.__file__.startswith({str(target)!r}), souffle.__file__
p = souffle.load({sample("mmoe")!r}).plan(strategy="souffle")
print(json.dumps({{"runner": _default_runner(), "plan": p.to_json(),
                  "verified": p.verify(level="kernels").ok,
                  "profiled": p.profile(backend="emulator").get("device")}}))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(target)))
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout)
    assert got["runner"] == str(pkg / "bin" / "souffle-runner")
    assert got["verified"] and got["profiled"] == "CPU emulator"
    cli = subprocess.run([str(pkg / "bin" / "souffle-cli"), "plan", sample("mmoe"),
                          "--strategy", "souffle", "--json", "-q"],
                         capture_output=True, text=True, check=True)

    def without_times(text):
        return re.sub(r'"(ms|load_ms)": [-0-9.e+]+', r'"\1": 0', text)

    assert without_times(got["plan"]) == without_times(cli.stdout)
