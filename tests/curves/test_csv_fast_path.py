"""A plain CSV is parsed by pandas' C reader; the row-by-row reader (every cell as text,
then :func:`float`) is the slow direct implementation it must equal, value for value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import scalekit.curves.readers._csv_file as csv_file
from scalekit.curves import read_curves
from scalekit.errors import InputError

# number texts as people and programs write them: exponents, signs, padding, leading
# zeros in run names, 17 significant digits, integers beyond 2**53 in a float column
PLAIN = """run,step,params,tokens,loss,config.lr,lr
001,0, 1.5e8,1e9,3.25,1e-3,0.0001
001,10,150000000,2.0e9, 2.5 ,1e-3,+0.0002
001,20,1.5E8,3000000000,2.2500000000000001,1e-3,.0003
a,0,7e7,1e9,3.5,0.01,4e-4
a,7,7e7,9007199254740993,0.1,0.01,-0
"""


def _read(path, monkeypatch, *, fast: bool):
    with monkeypatch.context() as patch:
        if fast:  # the row reader must not be reached
            patch.setattr(csv_file, "_read_rows", lambda path: pytest.fail("read row by row"))
        else:
            patch.setattr(csv_file, "_read_plain", lambda path, text: None)
        return read_curves(path)


def test_a_plain_file_reads_as_the_row_reader_reads_it(tmp_path, monkeypatch):
    path = tmp_path / "plain.csv"
    path.write_text(PLAIN)
    fast, rows = _read(path, monkeypatch, fast=True), _read(path, monkeypatch, fast=False)
    pd.testing.assert_frame_equal(fast.frame, rows.frame, check_exact=True)
    assert list(fast.frame["run"].unique()) == ["001", "a"]      # not the number 1
    assert fast.frame["loss"].iloc[2] == float("2.2500000000000001")
    assert fast.notes == rows.notes
    assert fast.source_lines.line("a", 7) == rows.source_lines.line("a", 7) == 6


@pytest.mark.parametrize("text, line", [
    ("run,step,loss\na,1,0.5\na,2\n", 3),                     # a short row
    ("run,step,loss\na,1,0.5\n\na,2,x\n", 4),                 # a blank line above
    ("run,step,loss\na,1,0.5\na,2,0.4,9\n", 3),               # a long row
    ('run,step,loss\na,1,0.5\n"a\nb",2,x\n', 3),              # a cell over two lines
    ("run,step,loss\na,1,0.5\na,2,nan\n", 3),                 # NaN, as text
])
def test_an_error_names_the_line_the_row_reader_names(tmp_path, monkeypatch, text, line):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    messages = []
    for fast in (True, False):
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(csv_file, "_read_plain", lambda path, text: None)
            with pytest.raises(InputError) as caught:
                read_curves(path)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith((f"{path}:{line}: ", f"{path}:{line}, "))


def test_a_large_plain_file_takes_the_fast_path(tmp_path, monkeypatch):
    runs, steps = 50, 400
    monkeypatch.setattr(csv_file, "_ROWS", 3000)  # read in chunks, joined column by column
    step = np.tile(np.arange(steps), runs)
    frame = pd.DataFrame({"run": np.repeat([f"r{i}" for i in range(runs)], steps),
                          "step": step,   # whole numbers in the first chunks, then not
                          "tokens": np.where(np.arange(step.size) < 10_000, 2 ** 20 * (step + 1),
                                             2 ** 20 * (step + 1.5)),
                          "loss": np.linspace(3, 2, runs * steps)})
    path = tmp_path / "large.csv"
    frame.to_csv(path, index=False)
    curves = _read(path, monkeypatch, fast=True)
    np.testing.assert_array_equal(curves.frame["loss"], frame["loss"])
    pd.testing.assert_frame_equal(curves.frame, _read(path, monkeypatch, fast=False).frame,
                                  check_exact=True)
    assert curves.source_lines.line("r49", 399) == runs * steps + 1
