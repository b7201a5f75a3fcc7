"""Souffle Explorer from Python: load an ONNX model, plan it under a strategy, edit the plan,
compile, verify and profile its kernels, draw it in a notebook, and sweep many models.

    import souffle
    m = souffle.load("sample_models/bert/model.onnx")
    p = m.plan(strategy="souffle", gpu="a100")
    p.kernels[0].reasons
    q = p.edit(split="layers.0/ffn_out/MatMul")
    p.compare(q)                      # a table with deltas in a notebook
    p.verify(level="kernels")         # the kernels in the CPU emulator vs the reference data

See docs/python.md for the whole interface.
"""

from ._errors import EditRefused, InternalError, UserError
from ._model import (
    CompileResult,
    Comparison,
    Kernel,
    Model,
    Plan,
    ProfileResult,
    VerifyResult,
    load,
    price_cache,
    strategies,
)
from ._torch import from_torch
from .sweep import SweepResult, sweep

__all__ = [
    "CompileResult",
    "Comparison",
    "EditRefused",
    "InternalError",
    "Kernel",
    "Model",
    "Plan",
    "ProfileResult",
    "SweepResult",
    "UserError",
    "VerifyResult",
    "from_torch",
    "load",
    "price_cache",
    "strategies",
    "sweep",
]

__version__ = "0.1.0"
