"""The sample notebook (python/examples/quickstart.ipynb) executes in a Jupyter kernel and its
outputs hold the drawings: the plan as SVG with kernel clusters, the comparison as a table."""

import os

from conftest import SOURCE, need


def test_quickstart_notebook_executes():
    nbformat = need("nbformat", "python3-nbformat")
    nbclient = need("nbclient", "python3-nbclient")
    folder = os.path.join(SOURCE, "python", "examples")
    with open(os.path.join(folder, "quickstart.ipynb"), encoding="utf-8") as f:
        nb = nbformat.read(f, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": folder}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"].get("text/html", "") for o in outputs if "data" in o]
    svg = [o["data"].get("image/svg+xml", "") for o in outputs if "data" in o]
    assert any("<svg" in h and "cluster" in h for h in html), "the plan did not draw"
    assert any("<svg" in s for s in svg)
    assert any("<table>" in h and "delta" in h for h in html), "the comparison did not draw"
    text = "".join(o.get("text", "") for o in outputs)
    assert "refused: " in text and "already starts a kernel" in text
