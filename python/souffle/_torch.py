"""from_torch: a PyTorch module exported with the installed PyTorch, then loaded."""

import os
import tempfile

from ._errors import UserError


def from_torch(module, example_inputs, opset=17, input_names=None, output_names=None,
               keep=None, **load_options):
    """Exports `module` called on `example_inputs` (a tensor or a tuple of them) with
    torch.onnx.export (static shapes, the TorchScript exporter) and loads the file.

    keep: a path to keep the exported .onnx at (default: a temporary file, removed after
    loading). Other keyword arguments go to souffle.load. Raises UserError when PyTorch is not
    installed or the export fails (with PyTorch's message)."""
    try:
        import torch
    except ImportError:
        raise UserError("from_torch needs PyTorch (pip install torch): it is not installed",
                        "", "", "PyTorch is not installed") from None
    from ._model import load

    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    path = os.fspath(keep) if keep else None
    tmp = None
    if path is None:
        tmp = tempfile.NamedTemporaryFile(suffix=".onnx", delete=False)
        tmp.close()
        path = tmp.name
    names = input_names or [f"input_{i}" for i in range(len(example_inputs))]
    try:
        module.eval()
        kwargs = {}
        # Newer PyTorch defaults to the dynamo exporter; the TorchScript one needs no onnxscript.
        try:
            import inspect

            if "dynamo" in inspect.signature(torch.onnx.export).parameters:
                kwargs["dynamo"] = False
        except (TypeError, ValueError):
            pass
        with torch.no_grad():
            torch.onnx.export(module, example_inputs, path, opset_version=opset,
                              input_names=names, output_names=output_names, **kwargs)
    except Exception as e:  # the exporter raises many kinds
        if tmp is not None:
            os.unlink(path)
        raise UserError(f"torch.onnx.export failed: {e}", "", type(module).__name__,
                        str(e)) from e
    try:
        return load(path, **load_options)
    finally:
        if tmp is not None:
            os.unlink(path)
