"""Tables as data printed three ways (--format table|tsv|json), run names never cut, 80 columns,
repeated notes collapsed."""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from scalekit.curves import CurveStore
from scalekit.formatting import collapse_notes, format_number
from scalekit_cli.app import main

LONG = "sweep[lr=0.001,wd=0.1]-width-1024-depth-24-a-name-longer-than-a-narrow-terminal"


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.db"
    frame = pd.DataFrame({"run": [LONG, LONG, "b", "b"], "step": [1, 2, 1, 2],
                          "loss": [3.5, 3.125, 2.5, 2.25], "params": [1e6, 1e6, 2.5e9, 2.5e9]})
    source = tmp_path / "c.csv"
    frame.to_csv(source, index=False)
    assert main(["store", "import", str(source), "--store", str(path), "-q"]) == 0
    return path


def test_tsv_and_json_hold_what_the_store_holds(store, capsys):
    with CurveStore(store, create=False) as opened:
        runs = opened.runs().set_index("run")
    assert main(["store", "ls", "--store", str(store), "--format", "tsv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out), sep="\t").set_index("run")
    assert list(table.index) == list(runs.index)
    assert (table["params"] == runs["params"]).all() and (table["points"] == runs["points"]).all()
    assert main(["store", "show", "b", "--store", str(store), "--format", "json"]) == 0
    captured = capsys.readouterr()
    (shown,) = json.loads(captured.out)
    assert shown["columns"] == ["step", "loss"] and shown["rows"] == [[1, 2.5], [2, 2.25]]
    assert captured.err.startswith("run b (source")  # the header goes to stderr


def test_a_table_at_80_columns_keeps_every_run_name_whole(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["store", "ls", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in "".join(lines)
    first_cells = [re.split(r"[│┃]", line)[1].strip() for line in lines if line.startswith("│")]
    assert LONG in "".join(first_cells) and "b" in first_cells
    numbers = [re.split(r"[│┃]", line)[3].strip() for line in lines if line.startswith("│")]
    assert "2500000000" in numbers  # numbers are never wrapped


def test_an_unknown_format_is_refused_by_name(store, capsys):
    assert main(["store", "ls", "--store", str(store), "--format", "xml"]) == 2
    assert "`--format` is 'xml'" in capsys.readouterr().err


def test_repeated_notes_collapse_into_one_line_with_a_count():
    assert collapse_notes(["a", "b", "a", "a", "c"]) == ["a (×3)", "b", "c"]


@pytest.mark.parametrize("value, text", [(1234.5678, "1235"), (0.000123456, "1.235e-04"),
                                         (2.5e9, "2.500e+09"), (4500, "4500"), (None, "–"),
                                         (float("nan"), "–"), (True, "yes"), (0.0, "0")])
def test_the_one_number_formatter(value, text):
    assert format_number(value) == text


def test_a_table_wider_than_80_columns_is_split_repeating_its_first_column():
    from rich.console import Console

    from scalekit.report._tables import rich_table, table_data

    columns = ["policy", *(f"measure number {i}" for i in range(8))]
    rows = [[name, *(0.001234 * (i + 1) for i in range(8))] for name in ("uniform", "forecast")]
    grids = rich_table(table_data("wide", columns, rows), width=80)
    console = Console(width=80, file=io.StringIO(), color_system=None)
    for grid in grids:
        console.print(grid)
    text = console.file.getvalue()
    assert len(grids) > 1 and max(len(line) for line in text.splitlines()) <= 80
    assert all(f"measure number {i}" in text for i in range(8))
    assert text.count("forecast") == len(grids) and "0.009872" in text


def test_the_fit_report_writes_a_repeated_note_once_with_its_count():
    import numpy as np
    from rich.console import Console

    from scalekit.fit import fit_law
    from scalekit.report._fit_report import fit_renderables

    x = np.geomspace(1, 1e4, 20)
    fit = fit_law("saturating_power", {"x": x}, 0.5 + 3 * x ** -0.5)
    console = Console(width=100, file=io.StringIO(), color_system=None)
    console.print(fit_renderables(fit, notes=["dropped a run", "dropped a run", "other"],
                                  verbose=True))
    text = console.file.getvalue()
    assert text.count("dropped a run") == 1 and "note: dropped a run (×2)" in text
    assert "note: other" in text
