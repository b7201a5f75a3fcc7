"""souffle.from_torch with the PyTorch the setup script installs (Debian's python3-torch): a small
transformer block exported by torch.onnx.export, planned, and its kernels run in the emulator
against PyTorch's own output."""

import os
import sys

import numpy as np
import pytest

import souffle


def _torch():
    """PyTorch, or a skip on a machine where scripts/setup.sh has not installed it. Where the
    suite runs from scripts/test.sh (which runs setup first) SOUFFLE_SETUP_RAN=1 is set and a
    missing PyTorch fails instead."""
    try:
        import torch
    except ImportError as e:
        if os.environ.get("SOUFFLE_SETUP_RAN") == "1":
            pytest.fail(f"PyTorch does not import ({e}): scripts/setup.sh installs python3-torch")
        pytest.skip("PyTorch is not installed (scripts/setup.sh installs python3-torch)")
    return torch


def _block(torch):
    """Linear, GELU, LayerNorm, then one head of self-attention with a residual."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.act, self.norm = nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32)
            self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)

        def forward(self, x):
            h = self.norm(self.act(self.lin(x)))
            a = torch.softmax(self.q(h) @ self.k(h).transpose(-1, -2) / 32 ** 0.5, dim=-1)
            return h + a @ self.v(h)

    torch.manual_seed(0)
    # Random LayerNorm parameters: the defaults (ones, zeros) would hide a wrong affine step.
    net = Block()
    with torch.no_grad():
        net.norm.weight.uniform_(0.5, 1.5)
        net.norm.bias.uniform_(-0.5, 0.5)
    return net.eval()


def test_from_torch_plans_and_verifies_against_torch(tmp_path):
    torch = _torch()
    net = _block(torch)
    x = torch.randn(2, 8, 16)
    with torch.no_grad():
        want = net(x).numpy()
    keep = tmp_path / "block.onnx"
    m = souffle.from_torch(net, x, input_names=["x"], output_names=["y"], keep=keep)
    assert keep.stat().st_size > 0
    assert [i["name"] for i in m.inputs] == ["x"] and m.inputs[0]["shape"] == [2, 8, 16]
    assert m.graph["outputs"] == ["y"] and m.outputs[0]["shape"] == [2, 8, 32]
    ops = {n["op_type"] for n in m.graph["nodes"]}
    assert {"Gemm", "MatMul"} & ops and "Softmax" in ops, ops
    assert m.info["onnx_nodes"] > 10 and m.info["tes"] > 10
    for strategy in ("unfused", "souffle"):
        p = m.plan(strategy=strategy)
        assert p.kernels
        # The plan's kernels in the emulator against PyTorch's output.
        v = p.verify(level="kernels", data=([x.numpy()], [want]))
        assert v.ok, (strategy, v)
        assert v.max_abs < 1e-4
        got = p.run(x.numpy())[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # The fused plan has fewer kernels than the unfused one.
    assert len(m.plan(strategy="souffle").kernels) < len(m.plan(strategy="unfused").kernels)
    # Loading the kept file gives the same plan.
    again = souffle.load(str(keep)).plan(strategy="souffle")
    assert again.data["kernels"] == m.plan(strategy="souffle").data["kernels"]


@pytest.mark.filterwarnings("ignore:Converting a tensor to a NumPy array")
def test_from_torch_errors(monkeypatch):
    torch = _torch()

    class Bad(torch.nn.Module):
        def forward(self, x):
            return x.numpy()  # not traceable: the exporter raises

    with pytest.raises(souffle.UserError, match="torch.onnx.export failed") as e:
        souffle.from_torch(Bad(), torch.randn(2))
    assert e.value.node == "Bad"
    # Without PyTorch: a UserError saying so, not an ImportError.
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(souffle.UserError, match="needs PyTorch"):
        souffle.from_torch(object(), ())
