"""Paths the tests take from CTest (tests/python/CMakeLists.txt sets them)."""

import os
import subprocess

import pytest

SOURCE = os.environ.get("SOUFFLE_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
CLI = os.environ.get("SOUFFLE_CLI", os.path.join(SOURCE, "build", "app", "cli", "souffle-cli"))
SAMPLES = ["bert", "efficientnet", "lstm", "mmoe", "resnext", "swin"]


def need(module, package):
    """`module` imported, or the test skipped where scripts/setup.sh has not installed it; where
    the suite runs from scripts/test.sh (setup first, SOUFFLE_SETUP_RAN=1) a missing module
    fails the test instead."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("SOUFFLE_SETUP_RAN") == "1":
            pytest.fail(f"{module} does not import ({e}): scripts/setup.sh installs {package}")
        pytest.skip(f"{module} is not installed (scripts/setup.sh installs {package})")


def sample(name):
    return os.path.join(SOURCE, "sample_models", name, "model.onnx")


def cli_json(*args):
    """souffle-cli ARGS --json (-q where the command has it), parsed."""
    import json

    quiet = ["-q"] if args[0] != "inspect" else []
    out = subprocess.run([CLI, *args, "--json", *quiet], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def models():
    """Each sample model loaded once."""
    import souffle

    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = souffle.load(sample(name))
        return cache[name]

    return get
