"""Model, Plan and the results of their steps, over the extension `souffle._core`."""

import html
import json
import os
from dataclasses import dataclass, field

from . import _core
from ._errors import EditRefused, UserError, _install

_install()


def strategies():
    """The planning strategies, in the order the tools show them."""
    return list(_core.strategies())


def price_cache(on=True):
    """Whether plans take partition prices from the price cache in the cache folder
    ($SOUFFLE_CACHE_DIR, else the user's cache folder) and keep the prices they build there (on by
    default, as in `souffle-cli`): a model planned before, by any process, is planned again
    without building its kernels. Off: every partition is built to be priced."""
    _core.price_cache(bool(on))


def _bind_text(name, value):
    """`--bind NAME=VALUE` text of a binding: numbers (an array is flattened) or a .pb file."""
    if isinstance(value, (str, os.PathLike)):
        return f"{name}={os.fspath(value)}"
    try:
        import numpy as np

        flat = np.asarray(value).ravel().tolist()
    except ImportError:
        flat = list(value) if isinstance(value, (list, tuple)) else [value]
    return f"{name}=" + ",".join(repr(v) if isinstance(v, float) else str(v) for v in flat)


def load(source, dims=None, bind=None, shapes=None, progress=None):
    """Loads an ONNX model: a path, the bytes of a model file, or an onnx.ModelProto.

    dims: symbolic dimensions, {"batch": 1}; bind: model inputs fixed as constants,
    {"sr": 16000} (numbers, a sequence of numbers, or a .pb file); shapes: sizes of inputs whose
    dims the file leaves unnamed, {"x": [1, 3, 224, 224]}; progress: called with each step's name.
    Raises UserError naming the file, the node and the reason when the model cannot be taken.
    """
    data = None
    if hasattr(source, "SerializeToString"):  # an onnx.ModelProto
        data, path = source.SerializeToString(), "<ModelProto>"
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data, path = bytes(source), "<bytes>"
    else:
        path = os.fspath(source)
        if not os.path.exists(path):
            raise UserError(f"{path}: no such model file", path, "", "no such model file")
    binds = [_bind_text(k, v) for k, v in (bind or {}).items()]
    shape_text = [f"{k}=" + ",".join(str(int(d)) for d in v) for k, v in (shapes or {}).items()]
    handle = _core.load(path, data, {k: int(v) for k, v in (dims or {}).items()}, binds,
                        shape_text, progress)
    return Model(handle, dims or {}, bind or {}, shapes or {})


def _decisions_text(decisions):
    """Decisions JSON text from a path, a JSON string, a dict or a list of edits."""
    if decisions is None:
        return ""
    if isinstance(decisions, os.PathLike) or (
            isinstance(decisions, str) and not decisions.lstrip().startswith("{")):
        path = os.fspath(decisions)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise UserError(f"{path}: {e.strerror}", path, "", e.strerror) from None
    if isinstance(decisions, str):
        return decisions
    if isinstance(decisions, list):
        decisions = {"version": 1, "edits": decisions}
    return json.dumps(decisions)


class Model:
    """A loaded model: its graph (ONNX nodes and tensors), its TE program and their analysis."""

    def __init__(self, handle, dims, bind, shapes):
        self._h = handle
        self.dims, self.bind, self.shapes = dict(dims), dict(bind), dict(shapes)
        self._info = json.loads(handle.info())
        self._graph = None
        self._analysis = None

    @property
    def path(self):
        return self._h.path

    @property
    def info(self):
        """Counts, warnings, load time and the load's steps (import, fold, lower)."""
        return self._info

    @property
    def inputs(self):
        """[{"name", "dtype", "shape"}] of the ONNX graph's inputs, in the model's order (what
        `souffle-cli inspect --json` lists)."""
        return self._info["inputs"]

    @property
    def outputs(self):
        """[{"name", "dtype", "shape"}] of the ONNX graph's outputs, in the model's order (what
        `souffle-cli inspect --json` lists)."""
        return self._info["outputs"]

    @property
    def te_inputs(self):
        """[{"name", "dtype", "shape"}] of the TE program's inputs: the graph's, less any bound
        as constants; Plan.run takes its arrays in this order."""
        return self._info["te_inputs"]

    @property
    def te_outputs(self):
        """[{"name", "dtype", "shape"}] of the TE program's outputs, named after the TEs that
        compute them (the ONNX graph's outputs in the same order)."""
        return self._info["te_outputs"]

    @property
    def graph(self):
        """The typed, folded graph: {"nodes": [...], "tensors": {name: {...}}, ...}."""
        if self._graph is None:
            self._graph = json.loads(self._h.graph())
        return self._graph

    @property
    def te_program(self):
        """The lowered TE program as text."""
        return self._h.te_program()

    @property
    def analysis(self):
        """The global analysis of the TE program: per TE, its kind, FLOPs and bytes; reuse."""
        if self._analysis is None:
            self._analysis = json.loads(self._h.analysis())
        return self._analysis

    def plan(self, strategy="souffle", gpu="a100", precision="fp32", sync="grid",
             decisions=None, waves=True, weight_panels=True, progress=None):
        """Plans the model as `souffle-cli plan` does; returns a Plan.

        decisions: a decisions file, its JSON text, a dict, or a list of edit dicts.
        """
        h = _core.plan(self._h, strategy, gpu, precision, sync, _decisions_text(decisions),
                       waves, weight_panels, progress)
        return Plan(h, self)

    def plans(self, strategies=None, **options):
        """One plan per strategy (all four by default), {name: Plan}."""
        return {s: self.plan(strategy=s, **options) for s in (strategies or _core.strategies())}

    def __repr__(self):
        i = self._info
        return f"<souffle.Model {self.path}: {i['onnx_nodes']} ONNX nodes, {i['tes']} TEs>"


@dataclass
class Kernel:
    """One kernel (partition) of a plan: its TEs in stages, the boundaries between them, the
    reasons it starts and grows, and its prices."""

    id: int
    kind: str
    ops: list
    tes: list
    stages: list
    boundaries: list
    reasons: list
    decisions: list
    est_time_us: float
    launch_us: float
    barrier_us: float
    grid_syncs: int
    launches: int
    cooperative: bool
    blocks: int
    threads: int
    flops: int
    dram_bytes: int
    raw: dict = field(repr=False)

    @classmethod
    def _of(cls, k):
        return cls(id=k["id"], kind=k["kind"], ops=k["ops"], tes=k["tes"], stages=k["stages"],
                   boundaries=k.get("boundaries", []), reasons=k["reasons"],
                   decisions=k.get("decisions", []), est_time_us=k["est_time_us"],
                   launch_us=k.get("launch_us", 0.0), barrier_us=k.get("barrier_us", 0.0),
                   grid_syncs=k["grid_syncs"], launches=k.get("launches", 1),
                   cooperative=k["cooperative"], blocks=k["blocks"], threads=k["threads"],
                   flops=k["flops"], dram_bytes=k["dram_bytes"], raw=k)


class _Result(dict):
    """A step's result: a dict (the JSON the command line prints) with attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class CompileResult(_Result):
    """kernels (name, ok, registers, spill_bytes, per_arch...), errors, ok, build_ms,
    compile_ms; `cuda` maps each kernel's name to its CUDA C."""


class VerifyResult(_Result):
    """ok, the element-wise verdict per output (checks), max errors and times."""

    def __bool__(self):
        return bool(self["ok"])


class ProfileResult(_Result):
    """The runner's measurement (profile --json's report of one strategy). In a notebook it
    draws as a timeline: each kernel a bar at its median time after its median gap."""

    def timeline(self):
        """[(kernel, start_us, end_us)] of one run laid out from the medians."""
        t, out = 0.0, []
        for k in self.get("kernels", []):
            t += k.get("gap_us", {}).get("median", 0.0)
            d = k.get("time_us", {}).get("median", 0.0)
            out.append((k["name"], t, t + d))
            t += d
        return out

    def timeline_svg(self, width=720):
        """The timeline as an SVG Gantt chart, one row per kernel."""
        rows = self.timeline()
        end = max((e for _, _, e in rows), default=0.0) or 1.0
        left, row_h = 150, 18
        h = 30 + row_h * len(rows)
        unit = "us" if self.get("backend") == "cuda" else "us (CPU, emulator)"
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
               f'font-family="sans-serif" font-size="11">',
               f'<text x="4" y="14">{html.escape(self.get("strategy", ""))} on '
               f'{html.escape(self.get("device", ""))}: {end:.1f} {unit}</text>']
        scale = (width - left - 10) / end
        for i, (name, a, b) in enumerate(rows):
            y = 22 + i * row_h
            colour = _PALETTE[i % len(_PALETTE)]
            out.append(f'<text x="4" y="{y + 12}">{html.escape(name)}</text>')
            out.append(f'<rect x="{left + a * scale:.1f}" y="{y}" '
                       f'width="{max(1.0, (b - a) * scale):.1f}" height="{row_h - 4}" '
                       f'fill="{colour}"><title>{html.escape(name)}: {b - a:.2f} us from '
                       f'{a:.2f} us</title></rect>')
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self):
        return self.timeline_svg()


_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac"]


def _edit_list(merge, split, pin, force, forbid, sync):
    def many(v, pairs=False):
        if v is None:
            return []
        if pairs:
            return [v] if isinstance(v, tuple) else list(v)
        return [v] if isinstance(v, str) else list(v)

    edits = []
    for a, b in many(merge, True):
        edits.append({"kind": "merge", "a": a, "b": b})
    edits += [{"kind": "split", "at": x} for x in many(split)]
    edits += [{"kind": "pin", "te": x} for x in many(pin)]
    edits += [{"kind": "force", "site": x} for x in many(force)]
    edits += [{"kind": "forbid", "site": x} for x in many(forbid)]
    for te, how in many(sync, True):
        edits.append({"kind": "sync", "at": te, "order": how})
    return edits


class Plan:
    """A fusion plan: kernels with stages, boundaries, reasons and prices; its own decisions.

    In a notebook it draws as the reports' graph, each kernel a cluster."""

    def __init__(self, handle, model):
        self._h = handle
        self.model = model
        self._data = None
        self._svg = None

    @property
    def data(self):
        """The plan as `souffle-cli plan --json` prints it, as a dict."""
        if self._data is None:
            self._data = json.loads(self._h.to_json())
        return self._data

    def to_json(self):
        """The text of `souffle-cli plan MODEL --json` with the same options."""
        return self._h.to_json()

    def decisions(self):
        """The edits this plan was made with, as a decisions file holds them (a dict)."""
        return json.loads(self._h.decisions())

    def save_decisions(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._h.decisions())

    @property
    def strategy(self):
        return self._h.strategy

    @property
    def gpu(self):
        return self._h.gpu

    @property
    def precision(self):
        return self._h.precision

    @property
    def sync(self):
        return self._h.sync

    @property
    def kernels(self):
        return [Kernel._of(k) for k in self.data["partitions"]]

    @property
    def stages(self):
        """Every kernel's stages: [(kernel id, stage dict)]."""
        return [(k["id"], s) for k in self.data["partitions"] for s in k["stages"]]

    @property
    def boundaries(self):
        """Every ordered stage boundary: [(kernel id, boundary dict)]."""
        return [(k["id"], b) for k in self.data["partitions"] for b in k.get("boundaries", [])]

    @property
    def reasons(self):
        """Why each kernel starts and why each TE joined it: {kernel id: [text]}."""
        return {k["id"]: k["reasons"] for k in self.data["partitions"]}

    @property
    def prices(self):
        """Estimated microseconds: {"total": us, kernel id: us}."""
        out = {"total": self.data["est_time_us"]}
        out.update({k["id"]: k["est_time_us"] for k in self.data["partitions"]})
        return out

    @property
    def est_time_us(self):
        return self.data["est_time_us"]

    @property
    def refused(self):
        return self.data["refused"]

    @property
    def transforms(self):
        return self.data["transforms"]

    def text(self):
        """The plan as `souffle-cli plan` prints it."""
        return self._h.text()

    def edit(self, merge=None, split=None, pin=None, force=None, forbid=None, sync=None,
             progress=None):
        """A new plan with these edits after this plan's own (names are TE or ONNX node names,
        force/forbid a transformation site's key). merge: (a, b) or a list of pairs; split, pin,
        force, forbid: a name or a list; sync: (te, "grid" | "flags"). An edit the planner
        refuses raises EditRefused with its reason."""
        edits = _edit_list(merge, split, pin, force, forbid, sync)
        if not edits:
            raise UserError("edit: no edit given (merge=, split=, pin=, force=, forbid=, sync=)")
        h, refused = _core.edit(self._h, json.dumps({"version": 1, "edits": edits}), progress)
        if refused:
            what, why = refused[0]
            raise EditRefused(what, why)
        return Plan(h, self.model)

    def compile(self, archs=("sm_80", "sm_90"), threads=0, cache=True):
        """Builds, emits and compiles every kernel with NVRTC (as `souffle-cli compile`)."""
        text, cuda = _core.compile(self._h, list(archs), threads, cache)
        r = CompileResult(json.loads(text))
        r["cuda"] = dict(cuda)
        return r

    def verify(self, level="kernels", data=None, rtol=None, atol=None, progress=None):
        """Runs the plan against reference outputs: level "kernels" runs its kernels in the CPU
        emulator, "te" its TE program in the interpreter. data: None (the model's folder's
        test_data_set_N), a folder, or NumPy data: (inputs, outputs), a list of such pairs, or
        {"inputs": [...], "outputs": [...]}."""
        sets = data
        if data is not None and not isinstance(data, (str, os.PathLike)):
            if isinstance(data, dict):
                data = (data["inputs"], data["outputs"])
            if isinstance(data, tuple):
                data = [data]
            sets = [(list(i), list(o)) for i, o in data]
        elif isinstance(data, os.PathLike):
            sets = os.fspath(data)
        return VerifyResult(json.loads(_core.verify(self._h, level, sets, rtol, atol, progress)))

    def run(self, *inputs):
        """The plan's kernels in the CPU emulator on NumPy inputs (model.te_inputs' order: the
        model's inputs less those bound; or one dict by name); returns the outputs as NumPy
        arrays, in the model's order."""
        if len(inputs) == 1 and isinstance(inputs[0], dict):
            by_name = inputs[0]
            inputs = [by_name[i["name"]] for i in self.model.te_inputs]
        return list(_core.run(self._h, list(inputs)))

    def profile(self, backend="emulator", runner=None, runs=0, data=None, bundle_dir=None,
                timeout=600.0):
        """Compiles the plan into a bundle and has souffle-runner load, run, verify and time it
        (backend "emulator": CPU times of the emulator; "cuda": a GPU). runner: the command that
        starts souffle-runner (default: the one built with this package, or on PATH)."""
        cmd = runner or _default_runner()
        text = _core.profile(self._h, backend, cmd, int(runs), os.fspath(data or ""),
                             os.fspath(bundle_dir or ""), float(timeout))
        return ProfileResult(json.loads(text))

    def report(self, path, compare=None):
        """Writes a report (.html, .json, .csv or .dot, by the extension); with `compare` (another
        Plan of the model), the two plans side by side. Returns the path."""
        other = compare._h if compare is not None else None
        _core.report(self._h, other, os.fspath(path))
        return path

    def compare(self, other):
        """The kernels of two plans of one model grouped by the ONNX nodes they share."""
        return Comparison(self, other)

    def svg(self):
        """The op graph with each kernel a cluster (the reports' drawing), as SVG text."""
        if self._svg is None:
            self._svg = _core.plan_svg(self._h)
        return self._svg

    def _repr_svg_(self):
        return self.svg()

    def _repr_html_(self):
        d = self.data
        head = (f"<p><b>{html.escape(self.strategy)}</b> on {html.escape(d['gpu'])} "
                f"({html.escape(d['precision'])}): {d['kernels']} kernels, {d['launches']} "
                f"launches, {d['grid_syncs']} grid barriers, estimated "
                f"{d['est_time_us']:.1f} us</p>")
        svg = self.svg()
        at = svg.find("<svg")
        return head + (svg[at:] if at >= 0 else html.escape(svg))

    def __repr__(self):
        d = self.data
        return (f"<souffle.Plan {self.strategy} on {d['gpu']}: {d['kernels']} kernels, "
                f"est. {d['est_time_us']:.1f} us>")


def _default_runner():
    env = os.environ.get("SOUFFLE_RUNNER")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "bin", "souffle-runner"), _core.build_runner):
        if p and os.path.exists(p):
            return p
    return ""  # the library's own search: beside the interpreter, then PATH


class Comparison:
    """Two plans of one model, kernel groups side by side with their deltas (b - a)."""

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.rows = json.loads(_core.compare(a._h, b._h))["rows"]

    @property
    def totals(self):
        da, db = self.a.data, self.b.data
        keys = ("kernels", "launches", "grid_syncs", "est_time_us", "dram_bytes")
        return {k: (da[k], db[k], db[k] - da[k]) for k in keys}

    def _label(self, p):
        edits = p.decisions().get("edits", [])
        return p.strategy + (f" + {len(edits)} edits" if edits else "")

    def _repr_html_(self):
        la, lb = html.escape(self._label(self.a)), html.escape(self._label(self.b))
        out = ["<table>", f"<tr><th></th><th>{la}</th><th>{lb}</th><th>delta</th></tr>"]
        for k, (x, y, d) in self.totals.items():
            fmt = "{:.1f}" if isinstance(x, float) else "{}"
            out.append(f"<tr><td>{k}</td><td>{fmt.format(x)}</td><td>{fmt.format(y)}</td>"
                       f"<td>{'+' if d > 0 else ''}{fmt.format(d)}</td></tr>")
        out.append("</table><table><tr><th>nodes from</th><th>ops</th><th>kernels a</th>"
                   "<th>kernels b</th><th>a us</th><th>b us</th><th>delta us</th></tr>")
        for r in self.rows:
            if r["same"]:
                continue
            d = r["b_us"] - r["a_us"]
            out.append(f"<tr><td>{html.escape(r['first_op'])}</td><td>{r['ops']}</td>"
                       f"<td>{r['a']}</td><td>{r['b']}</td><td>{r['a_us']:.2f}</td>"
                       f"<td>{r['b_us']:.2f}</td><td>{'+' if d > 0 else ''}{d:.2f}</td></tr>")
        out.append("</table>")
        return "\n".join(out)

    def __repr__(self):
        t = self.totals["est_time_us"]
        changed = sum(1 for r in self.rows if not r["same"])
        return (f"<souffle.Comparison {self._label(self.a)} -> {self._label(self.b)}: "
                f"{changed} kernel groups differ, est. {t[0]:.1f} -> {t[1]:.1f} us>")
