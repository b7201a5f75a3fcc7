"""torch.onnx.export with the TorchScript-based exporter where the PyTorch at hand still has it,
else the dynamo-based one, saying which and why (export_models.py, the device check).

The project's reference layout and the ops its importer expects come from the TorchScript-based
exporter (dynamo=False); PyTorch 2.9 deprecated it and a later release may refuse or drop it.
Then the dynamo-based exporter (opset 18 at least) writes the model, and the note says so: its
graph can differ (other op spellings, other tensor names), which the caller checks as before."""

import inspect

DYNAMO_MIN_OPSET = 18


def export(torch, model, args, path, **kwargs):
    """Exports `model` on `args` to `path`; returns (exporter, note): exporter is "torchscript"
    or "dynamo", note is empty unless the TorchScript-based exporter was asked for and refused.
    `torch` is the torch module (passed in, so that this file imports without PyTorch)."""
    params = inspect.signature(torch.onnx.export).parameters
    if "dynamo" not in params:  # a PyTorch from before the dynamo-based exporter
        torch.onnx.export(model, args, path, **kwargs)
        return "torchscript", ""
    try:
        torch.onnx.export(model, args, path, **dict(kwargs, dynamo=False))
        return "torchscript", ""
    except Exception as first:  # the TorchScript-based exporter refused or is gone
        refused = "%s: %s" % (type(first).__name__, str(first).strip().splitlines()[0][:300] if str(first).strip() else "")
    kw = dict(kwargs, dynamo=True)
    kw["opset_version"] = max(kw.get("opset_version") or DYNAMO_MIN_OPSET, DYNAMO_MIN_OPSET)
    kw.pop("training", None)  # the dynamo-based exporter exports eval mode and has no such option
    try:
        torch.onnx.export(model, args, path, **kw)
    except Exception as second:
        raise RuntimeError("the TorchScript-based exporter refused (%s) and the dynamo-based one failed: %s: %s"
                           % (refused, type(second).__name__, second)) from second
    return "dynamo", ("the TorchScript-based exporter (dynamo=False) refused in PyTorch %s (%s): exported with "
                      "the dynamo-based one, opset %d" % (getattr(torch, "__version__", "?"), refused, kw["opset_version"]))
