"""Each rejection names file, line, column and reason; the store stays byte-for-byte the same."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from curves.curve_frames import store_files_digest

from scalekit.curves import CurveStore, read_curves
from scalekit.errors import InputError
from scalekit_cli.app import main

GOOD = "run,step,loss,compute,params\na,1,3.0,10,100\na,2,2.5,20,100\n"

# name, file text, expected line, expected column, words of the reason
BAD_FILES = [
    ("missing loss column", "run,step,value\na,1,2.0\n", 1, None, "missing required column"),
    ("empty file", "", None, None, "empty"),
    ("header only", "run,step,loss\n", 2, None, "no data rows"),
    ("non-numeric cell", "run,step,loss\na,1,2.0\na,2,abc\n", 3, "loss", "not a number"),
    ("NaN", "run,step,loss\na,1,2.0\na,2,nan\n", 3, "loss", "NaN"),
    ("infinity", "run,step,loss\na,1,2.0\na,2,inf\n", 3, "loss", "finite"),
    ("negative infinity", "run,step,loss\na,1,-inf\n", 2, "loss", "finite"),
    ("empty loss cell", "run,step,loss\na,1,2.0\na,2,\n", 3, "loss", "missing"),
    ("zero loss", "run,step,loss\na,1,2.0\na,2,0\n", 3, "loss", "not positive"),
    ("negative params", "run,step,loss,params\na,1,2.0,-5\n", 2, "params", "not positive"),
    ("zero tokens", "run,step,loss,tokens\na,1,2.0,7\na,2,1.9,0\n", 3, "tokens", "not positive"),
    ("zero compute", "run,step,loss,compute\nb,1,2.0,0\n", 2, "compute", "not positive"),
    ("duplicate run and step", "run,step,loss\na,1,2.0\nb,1,2.0\na,1,1.5\n", 4, "step",
     "duplicate"),
    ("repeated run without step", "model,loss\na,2.0\na,1.5\n", 3, "model", "no step column"),
    ("compute decreases", "run,step,loss,compute\na,1,2.0,10\na,3,1.0,30\na,2,1.5,5\n", 4,
     "compute", "decreases"),
    ("fractional step", "run,step,loss\na,1.5,2.0\n", 2, "step", "whole number"),
    ("params change within a run", "run,step,loss,params\na,1,2.0,5\na,2,1.0,6\n", 3, "params",
     "changes within run"),
    ("ragged row", "run,step,loss\na,1,2.0,7,8\n", 2, None, "not valid CSV"),
    ("seed beyond 2**53", "run,step,loss,seed\na,1,2.0,12345678901234567890\n", 2, "seed",
     "2**53"),
]


@pytest.fixture
def store(tmp_path):
    """A store holding one good run, closed, with the digest of its files."""
    good = tmp_path / "good.csv"
    good.write_text(GOOD)
    path = tmp_path / "curves.db"
    assert main(["store", "import", str(good), "--store", str(path), "--quiet"]) == 0
    return path, store_files_digest(path)


@pytest.mark.parametrize("name, text, line, column, reason", BAD_FILES,
                         ids=[case[0] for case in BAD_FILES])
def test_bad_file_is_rejected_with_location_and_store_unchanged(tmp_path, capsys, store, name,
                                                                text, line, column, reason):
    path, before = store
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    capsys.readouterr()
    assert main(["store", "import", str(bad), "--store", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert reason in err
    assert f"{bad}:{line}" in err if line is not None else str(bad) in err
    if column is not None:
        assert f"column {column!r}" in err
    assert store_files_digest(path) == before


def test_mapping_to_unknown_column_exits_2_and_store_unchanged(tmp_path, capsys, store):
    path, before = store
    good = tmp_path / "other.csv"
    good.write_text(GOOD.replace("a,", "c,"))
    assert main(["store", "import", str(good), "--store", str(path), "--map", "loss=nope"]) == 2
    assert "column 'nope'" in capsys.readouterr().err
    assert store_files_digest(path) == before


def test_second_bad_file_of_an_import_writes_nothing(tmp_path, store):
    path, before = store
    fine, bad = tmp_path / "fine.csv", tmp_path / "bad.csv"
    fine.write_text(GOOD.replace("a,", "z,"))
    bad.write_text("run,step,loss\nq,1,nan\n")
    assert main(["store", "import", str(fine), str(bad), "--store", str(path)]) == 2
    assert store_files_digest(path) == before


def test_store_level_rejection_of_a_later_file_undoes_the_earlier_ones(tmp_path, store):
    path, before = store
    fine, clash = tmp_path / "fine.csv", tmp_path / "clash.csv"
    fine.write_text(GOOD.replace("a,", "z,"))
    clash.write_text("run,step,loss\na,2,9.0\n")  # run a already has step 2 in the store
    assert main(["store", "import", str(fine), str(clash), "--store", str(path)]) == 2
    assert store_files_digest(path) == before


def _frame(run, steps, loss, compute=None, **attrs):
    frame = pd.DataFrame({"run": run, "step": steps, "loss": loss})
    if compute is not None:
        frame["compute"] = compute
    for key, value in attrs.items():
        frame[key] = value
    return frame


STORE_REJECTIONS = [
    ("point already stored", _frame("a", [2], [1.0], [20.0]), "already"),
    ("compute below a stored point", _frame("a", [3], [1.0], [15.0]), "decreases"),
    ("compute above a later stored point", _frame("a", [0], [4.0], [50.0]), "decreases"),
    ("run attributes differ", _frame("a", [5], [1.0], [40.0], params=999.0), "exists with"),
    ("bad row after good runs", pd.concat([_frame("new", [1, 2], [3.0, 2.0]),
                                           _frame("b", [1], [np.inf])]), "finite"),
]


@pytest.mark.parametrize("name, frame, reason", STORE_REJECTIONS,
                         ids=[case[0] for case in STORE_REJECTIONS])
def test_store_level_rejection_rolls_back_everything(store, name, frame, reason):
    path, before = store
    with CurveStore(path) as opened:
        with pytest.raises(InputError, match=reason):
            opened.import_frame(frame.reset_index(drop=True), source="test")
        assert list(opened.runs()["run"]) == ["a"]
    assert store_files_digest(path) == before


def test_append_points_rejections_leave_store_unchanged(store):
    path, before = store
    with CurveStore(path) as opened:
        with pytest.raises(InputError, match="no run"):
            opened.append_points("ghost", {"step": [1], "loss": [1.0]})
        with pytest.raises(InputError, match="already"):
            opened.append_points("a", {"step": [3, 2], "loss": [1.0, 1.0]})
        with pytest.raises(InputError, match="decreases"):
            opened.append_points("a", {"step": [3], "loss": [1.0], "compute": [19.0]})
        with pytest.raises(InputError, match="not positive"):
            opened.append_points("a", {"step": [3], "loss": [-1.0]})
        with pytest.raises(InputError, match="missing required column 'step'"):
            opened.append_points("a", {"loss": [1.0]})
    assert store_files_digest(path) == before


def test_a_file_that_is_not_a_store_is_an_input_error(tmp_path, capsys):
    path = tmp_path / "notes.db"
    path.write_text("just some text, long enough to not be a SQLite header" * 20)
    assert main(["store", "ls", "--store", str(path)]) == 2
    assert "not a scalekit curve store" in capsys.readouterr().err


def test_run_level_change_names_plain_values(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("run,step,loss,params\na,1,2.0,100\na,2,1.5,\n")
    with pytest.raises(InputError) as info:
        read_curves(bad)
    assert info.value.reason == "the run-level value changes within run 'a' (nan after 100.0)"
    assert (info.value.line, info.value.column) == (3, "params")
