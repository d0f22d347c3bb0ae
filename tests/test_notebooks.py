"""Every notebook in notebooks/ runs from top to bottom without an error."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    before = sorted(path.parent.iterdir())
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [out for cell in notebook.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors
    assert sorted(path.parent.iterdir()) == before          # figures inline, no file written there
    texts = [str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
             for cell in notebook.cells if cell.cell_type == "code"
             for out in cell.get("outputs", [])]
    assert not any("\x1b[" in text for text in texts)      # no ANSI escape codes
    sources = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert "savefig" not in sources and "Image(" not in sources      # no PNG written and read back
    assert any("image/png" in out.get("data", {}) for cell in notebook.cells   # a figure inline
               if cell.cell_type == "code" for out in cell.get("outputs", []))
    last = notebook.cells[-1].outputs[-1]["data"]                     # ends with a table to sort
    assert "dataframe" in last["text/html"] and "to_frame()" in notebook.cells[-1].source
    if path.name.startswith("01_"):      # the fit notebook's table holds the law's parameters
        assert "alpha" in last["text/plain"]
