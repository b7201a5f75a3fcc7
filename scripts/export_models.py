#!/usr/bin/env python3
"""Export the six models of the Souffle evaluation to ONNX, with reference test data.

Each model is built in PyTorch with fixed seeds, exported with the TorchScript exporter
(static shapes, batch 1) and written in the ONNX backend-test layout:

    <out>/<name>/model.onnx
    <out>/<name>/test_data_set_0/input_K.pb, output_K.pb

Inputs are random (fixed seed); outputs are what PyTorch computes in eval mode, in float32.

    export_models.py                       small configurations into sample_models/
    export_models.py --full --out DIR      the paper's full-size configurations
    export_models.py --swin-t --out DIR    torchvision's swin_t architecture (random weights)
    export_models.py --only bert,lstm      restrict to some models
"""

import argparse
import collections
import inspect
import json
import math
import os
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import efficientnet as tv_efficientnet
from torchvision.models import resnet as tv_resnet
from torchvision.models import swin_transformer as tv_swin

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_export  # noqa: E402

OPSET = 17
MODEL_NAMES = ["bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"]
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------------------------
# Model definitions
# ----------------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    """One post-LayerNorm BERT encoder layer, spelled out op by op so that the exported graph
    shows the structure the compiler reasons about (three projections reading one input,
    head reshapes/permutes, two-pass softmax, residual + LayerNorm epilogues)."""

    def __init__(self, hidden, heads, ffn, eps=1e-12):
        super().__init__()
        assert hidden % heads == 0
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=eps)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.reshape(b, s, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, h = x.shape
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.attn_norm(self.attn_out(ctx) + x)
        # The erf form of GELU, as in the original BERT.
        mid = F.gelu(self.ffn_in(x), approximate="none")
        return self.ffn_norm(self.ffn_out(mid) + x)


class BertEncoder(nn.Module):
    """BERT encoder stack without embeddings: hidden states in, hidden states out."""

    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states


class NarrowResNeXt(tv_resnet.ResNet):
    """torchvision's ResNet with Bottleneck blocks, but with narrower stage widths.

    torchvision hard-codes the stage widths 64/128/256/512; ResNeXt's grouped 3x3 convolutions
    with 64 groups make even one block per stage weigh ~47 MB at those widths. Rebuilding the
    stem and the four stages through the same `_make_layer` keeps every block, op kind and the
    64-group structure while shrinking the weights."""

    def __init__(self, layers, base_width, groups, width_per_group, num_classes):
        super().__init__(
            tv_resnet.Bottleneck,
            layers,
            num_classes=num_classes,
            groups=groups,
            width_per_group=width_per_group,
        )
        block = tv_resnet.Bottleneck
        self.inplanes = base_width
        self.dilation = 1
        self.conv1 = nn.Conv2d(3, base_width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base_width)
        self.layer1 = self._make_layer(block, base_width, layers[0])
        self.layer2 = self._make_layer(block, base_width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, base_width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, base_width * 8, layers[3], stride=2)
        self.fc = nn.Linear(base_width * 8 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


class StackedLstm(nn.Module):
    """Stacked LSTM over a sequence-major input [steps, 1, input]; returns (Y, h_n, c_n)."""

    def __init__(self, input_size, hidden, layers):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden, num_layers=layers)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class Mmoe(nn.Module):
    """Multi-gate Mixture-of-Experts (Ma et al., KDD'18): shared experts, one softmax gate and
    one tower per task. Experts are separate Linear layers on purpose: they are the independent
    same-shape GEMMs that a horizontal transformation concatenates."""

    def __init__(self, input_size=100, experts=8, expert_units=16, tasks=2, tower_units=8):
        super().__init__()
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(input_size, expert_units), nn.ReLU()) for _ in range(experts)]
        )
        self.gates = nn.ModuleList([nn.Linear(input_size, experts) for _ in range(tasks)])
        self.towers = nn.ModuleList(
            [
                nn.Sequential(nn.Linear(expert_units, tower_units), nn.ReLU(), nn.Linear(tower_units, 1))
                for _ in range(tasks)
            ]
        )

    def forward(self, x):
        expert_out = torch.stack([e(x) for e in self.experts], dim=1)  # [b, experts, units]
        outs = []
        for gate, tower in zip(self.gates, self.towers):
            w = torch.softmax(gate(x), dim=-1).unsqueeze(-1)  # [b, experts, 1]
            outs.append(tower((w * expert_out).sum(dim=1)))
        return tuple(outs)


# ----------------------------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------------------------


def build_bert(full):
    cfg = dict(layers=12, seq=384, hidden=768, heads=12, ffn=3072) if full else dict(
        layers=2, seq=64, hidden=128, heads=4, ffn=512
    )
    model = BertEncoder(cfg["layers"], cfg["hidden"], cfg["heads"], cfg["ffn"])
    inputs = {"hidden_states": (1, cfg["seq"], cfg["hidden"])}
    return model, inputs, ["output"], cfg


def build_resnext(full):
    if full:
        cfg = dict(layers=[3, 4, 23, 3], groups=64, width_per_group=4, image=224, num_classes=1000)
        model = tv_resnet.ResNet(
            tv_resnet.Bottleneck,
            cfg["layers"],
            groups=cfg["groups"],
            width_per_group=cfg["width_per_group"],
            num_classes=cfg["num_classes"],
        )
    else:
        cfg = dict(layers=[1, 1, 1, 1], base_width=16, groups=64, width_per_group=4, image=64, num_classes=10)
        model = NarrowResNeXt(
            cfg["layers"], cfg["base_width"], cfg["groups"], cfg["width_per_group"], cfg["num_classes"]
        )
    inputs = {"image": (1, 3, cfg["image"], cfg["image"])}
    return model, inputs, ["logits"], cfg


def build_lstm(full):
    cfg = dict(layers=10, hidden=256, steps=100, input=256) if full else dict(
        layers=2, hidden=64, steps=16, input=64
    )
    model = StackedLstm(cfg["input"], cfg["hidden"], cfg["layers"])
    inputs = {"sequence": (cfg["steps"], 1, cfg["input"])}
    return model, inputs, ["y", "h_n", "c_n"], cfg


def build_efficientnet(full):
    if full:
        cfg = dict(variant="b0", width_mult=1.0, depth_mult=1.0, image=224, num_classes=1000)
    else:
        # Half width and half depth keeps all seven stages, both kernel sizes (3, 5), expand
        # ratios 1 and 6, squeeze-excitation and the residual blocks of stages 4-6.
        cfg = dict(variant="b0-small", width_mult=0.5, depth_mult=0.5, image=64, num_classes=100)
    setting, last_channel = tv_efficientnet._efficientnet_conf(
        "efficientnet_b0", width_mult=cfg["width_mult"], depth_mult=cfg["depth_mult"]
    )
    model = tv_efficientnet.EfficientNet(
        setting, dropout=0.2, last_channel=last_channel, num_classes=cfg["num_classes"]
    )
    cfg["stage_layers"] = [s.num_layers for s in setting]
    cfg["stage_channels"] = [s.out_channels for s in setting]
    inputs = {"image": (1, 3, cfg["image"], cfg["image"])}
    return model, inputs, ["logits"], cfg


def build_swin(full, variant=None):
    if variant == "swin_t":
        cfg = dict(embed=96, depths=[2, 2, 6, 2], heads=[3, 6, 12, 24], window=7, image=224, num_classes=1000)
        sd = 0.2
    elif full:
        cfg = dict(embed=128, depths=[2, 2, 18, 2], heads=[4, 8, 16, 32], window=7, image=224, num_classes=1000)
        sd = 0.5
    else:
        # 96 / patch 4 = 24 -> stages 24, 12, 6, 3: every stage divisible by the window, the last
        # stage exactly one window (no shift), as 56/28/14/7 with window 7 in the full model.
        cfg = dict(embed=32, depths=[2, 2, 2, 2], heads=[1, 2, 4, 8], window=3, image=96, num_classes=100)
        sd = 0.1
    model = tv_swin.SwinTransformer(
        patch_size=[4, 4],
        embed_dim=cfg["embed"],
        depths=cfg["depths"],
        num_heads=cfg["heads"],
        window_size=[cfg["window"], cfg["window"]],
        stochastic_depth_prob=sd,
        num_classes=cfg["num_classes"],
    )
    inputs = {"image": (1, 3, cfg["image"], cfg["image"])}
    return model, inputs, ["logits"], cfg


def build_mmoe(full):
    cfg = dict(input=100, experts=8, expert_units=16, tasks=2, tower_units=8)
    model = Mmoe(cfg["input"], cfg["experts"], cfg["expert_units"], cfg["tasks"], cfg["tower_units"])
    inputs = {"features": (1, cfg["input"])}
    return model, inputs, ["task_%d" % t for t in range(cfg["tasks"])], cfg


BUILDERS = {
    "bert": build_bert,
    "resnext": build_resnext,
    "lstm": build_lstm,
    "efficientnet": build_efficientnet,
    "swin": build_swin,
    "mmoe": build_mmoe,
}


# ----------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------


def randomize_norm_stats(model, gen):
    """Default BatchNorm/LayerNorm parameters (mean 0, var 1, scale 1, shift 0) would make a
    wrong scale or shift in a consumer of the model invisible; give them random values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def model_seed(name):
    # A stable per-model seed (Python's hash() is salted per process).
    return 1000 + sum((i + 1) * ord(c) for i, c in enumerate(name))


def export_one(name, out_dir, full, variant=None, fold=True):
    seed = model_seed(variant or name)
    torch.manual_seed(seed)
    if name == "swin":
        model, input_shapes, output_names, cfg = build_swin(full, variant)
    else:
        model, input_shapes, output_names, cfg = BUILDERS[name](full)
    randomize_norm_stats(model, torch.Generator().manual_seed(seed + 1))
    model.eval()

    rng = np.random.RandomState(seed + 2)
    input_names = list(input_shapes)
    feeds = [rng.standard_normal(shape).astype(np.float32) for shape in input_shapes.values()]
    torch_inputs = tuple(torch.from_numpy(a) for a in feeds)

    with torch.no_grad():
        ref = [t.detach().clone() for t in as_tuple(model(*torch_inputs))]
        again = as_tuple(model(*torch_inputs))
    for a, b in zip(ref, again):
        if not torch.equal(a, b):
            raise RuntimeError("%s: PyTorch outputs are not deterministic" % name)
    for a in ref:
        if not torch.isfinite(a).all():
            raise RuntimeError("%s: non-finite reference output" % name)

    model_dir = os.path.join(out_dir, variant or name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    model_path = os.path.join(model_dir, "model.onnx")

    t0 = time.time()
    kwargs = dict(
        export_params=True,
        opset_version=OPSET,
        do_constant_folding=fold,
        input_names=input_names,
        output_names=output_names,
    )
    params = inspect.signature(torch.onnx.export).parameters
    if "training" in params:
        kwargs["training"] = torch.onnx.TrainingMode.EVAL
    with torch.no_grad():
        # The TorchScript-based exporter where this PyTorch still has it (the reference layout
        # and the ops the project expects come from it), else the dynamo-based one, said so.
        exporter, exporter_note = onnx_export.export(torch, model, torch_inputs, model_path, **kwargs)
    export_s = time.time() - t0
    if exporter_note:
        print("%s: %s" % (variant or name, exporter_note), flush=True)

    proto = onnx.load(model_path)
    onnx.checker.check_model(proto)
    if [i.name for i in proto.graph.input if i.name in input_names] != input_names:
        raise RuntimeError("%s: exported inputs %s" % (name, [i.name for i in proto.graph.input]))
    if [o.name for o in proto.graph.output] != output_names:
        raise RuntimeError("%s: exported outputs %s" % (name, [o.name for o in proto.graph.output]))
    if pin_output_shapes(proto, ref):
        # The exporter loses a static dimension when the graph computes it through Shape ops
        # (Swin's window partitioning); the model is static, so state the shape PyTorch produced.
        onnx.checker.check_model(proto)
        onnx.save(proto, model_path)
    for o, r in zip(proto.graph.output, ref):
        dims = [d.dim_value for d in o.type.tensor_type.shape.dim]
        if dims != list(r.shape):
            raise RuntimeError("%s: output %s has shape %s, expected %s" % (name, o.name, dims, list(r.shape)))

    for k, (n, a) in enumerate(zip(input_names, feeds)):
        write_tensor(os.path.join(data_dir, "input_%d.pb" % k), a, n)
    for k, (n, r) in enumerate(zip(output_names, ref)):
        write_tensor(os.path.join(data_dir, "output_%d.pb" % k), r.numpy().astype(np.float32), n)

    ops = collections.Counter(n.op_type for n in proto.graph.node)
    size = dir_size(model_dir)
    params = sum(p.numel() for p in model.parameters())
    print(
        "%-14s %9.2f MB  %5d nodes  %6.2fM params  export %5.1fs  ops: %s"
        % (
            variant or name,
            size / 1e6,
            len(proto.graph.node),
            params / 1e6,
            export_s,
            " ".join("%s:%d" % (op, c) for op, c in sorted(ops.items())),
        ),
        flush=True,
    )
    return dict(name=variant or name, cfg=cfg, size=size, nodes=len(proto.graph.node), ops=ops, params=params,
                exporter=exporter, exporter_note=exporter_note, export_s=export_s)


def pin_output_shapes(proto, ref):
    """Replaces symbolic dimensions of graph outputs by the concrete ones; returns whether any
    changed. A rank or a concrete size that disagrees with PyTorch is left for the caller to
    report."""
    changed = False
    for o, r in zip(proto.graph.output, ref):
        dims = o.type.tensor_type.shape.dim
        if len(dims) != r.dim():
            continue
        for d, size in zip(dims, r.shape):
            if d.HasField("dim_param"):
                d.ClearField("dim_param")
                d.dim_value = int(size)
                changed = True
    return changed


def write_tensor(path, array, name):
    tensor = onnx.numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def dir_size(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the paper's full-size configurations")
    parser.add_argument("--swin-t", action="store_true", help="torchvision's swin_t architecture only")
    parser.add_argument("--out", help="output folder (default: sample_models/ of the repository)")
    parser.add_argument("--only", help="comma-separated model names: " + ",".join(MODEL_NAMES))
    parser.add_argument(
        "--no-fold", action="store_true", help="export without constant folding (keeps Shape/Gather chains)"
    )
    parser.add_argument("--summary", help="write what was exported (exporter used, notes) to this JSON file")
    args = parser.parse_args(argv)

    if (args.full or args.swin_t) and not args.out:
        parser.error("--full and --swin-t need --out (full-size models are not committed)")
    out_dir = args.out or os.path.join(REPO_ROOT, "sample_models")
    names = MODEL_NAMES
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODEL_NAMES]
        if unknown:
            parser.error("unknown model(s): %s" % ", ".join(unknown))

    torch.set_num_threads(max(1, min(16, os.cpu_count() or 1)))
    results = []
    if args.swin_t:
        results.append(export_one("swin", out_dir, full=True, variant="swin_t", fold=not args.no_fold))
    else:
        for name in names:
            results.append(export_one(name, out_dir, full=args.full, fold=not args.no_fold))
    total = sum(r["size"] for r in results)
    if args.summary:
        keys = ("name", "size", "nodes", "params", "exporter", "exporter_note", "export_s")
        with open(args.summary, "w") as f:
            json.dump([{k: r[k] for k in keys} for r in results], f, indent=1)
    print("total %.2f MB in %s" % (total / 1e6, out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
