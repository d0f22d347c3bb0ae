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
    if path.name.startswith("01_"):      # the fit notebook: its figure inline, a table at the end
        assert any("image/png" in out.get("data", {}) for cell in notebook.cells
                   if cell.cell_type == "code" for out in cell.get("outputs", []))
        last = notebook.cells[-1].outputs[-1]["data"]
        assert "dataframe" in last["text/html"] and "alpha" in last["text/plain"]
