"""`read_curves(keep=...)` keeps named columns as they are."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.curves import read_curves
from scalekit.errors import InputError


def test_kept_columns_come_back_unchanged(tmp_path):
    path = tmp_path / "c.csv"
    sizes = np.geomspace(10, 1e5, 6)
    lines = ["size,task,loss"] + [f"{float(s)!r},{'ab'[i % 2]},{1 + 1 / (i + 1)!r}"
                                  for i, s in enumerate(sizes)]
    path.write_text("\n".join(lines) + "\n")
    frame = read_curves(path, keep=["size", "task"])
    assert frame["size"].tolist() == sizes.tolist()
    assert frame["task"].tolist() == ["a", "b", "a", "b", "a", "b"]
    assert "size" not in " ".join(frame.attrs["notes"])


def test_keeping_a_missing_column_is_an_input_error(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("size,loss\n1,2\n")
    with pytest.raises(InputError, match="no column 'width' to keep"):
        read_curves(path, keep=["width"])
