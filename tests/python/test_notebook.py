"""The sample notebook (python/examples/quickstart.ipynb) executes in a Jupyter kernel through
`jupyter nbconvert --execute`, as a user runs it, and its outputs hold the drawings: the plan as
SVG with kernel clusters, the comparison as a table."""

import os
import subprocess
import sys

from conftest import SOURCE, need


def test_quickstart_notebook_executes(tmp_path):
    nbformat = need("nbformat", "python3-nbformat")
    need("nbconvert", "python3-nbconvert")
    folder = os.path.join(SOURCE, "python", "examples")
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=120", "--ExecutePreprocessor.kernel_name=python3",
                    "--output-dir", str(tmp_path), "--output", "executed.ipynb",
                    os.path.join(folder, "quickstart.ipynb")],
                   check=True, cwd=folder, timeout=300)
    with open(tmp_path / "executed.ipynb", encoding="utf-8") as f:
        nb = nbformat.read(f, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"].get("text/html", "") for o in outputs if "data" in o]
    svg = [o["data"].get("image/svg+xml", "") for o in outputs if "data" in o]
    assert any("<svg" in h and "cluster" in h for h in html), "the plan did not draw"
    assert any("<svg" in s for s in svg)
    assert any("<table>" in h and "delta" in h for h in html), "the comparison did not draw"
    text = "".join(o.get("text", "") for o in outputs)
    assert "refused: " in text and "already starts a kernel" in text
