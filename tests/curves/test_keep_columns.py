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
    frame_read = read_curves(path, keep=["size", "task"])
    frame = frame_read.frame
    assert frame["size"].tolist() == sizes.tolist()
    assert frame["task"].tolist() == ["a", "b", "a", "b", "a", "b"]
    assert "size" not in " ".join(frame_read.notes)


def test_keeping_a_missing_column_is_an_input_error(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("size,loss\n1,2\n")
    with pytest.raises(InputError, match="no column 'width' to keep"):
        read_curves(path, keep=["width"])


def test_keeping_a_column_that_plays_a_role_keeps_it_too(tmp_path):
    path = tmp_path / "isoflops.csv"
    path.write_text("compute_budget,training_tokens,validation_loss,model\n"
                    "1e18,1e9,3.5,a\n1e18,2e9,3.4,b\n1e19,5e9,3.0,c\n")
    frame = read_curves(path, keep=["compute_budget", "training_tokens", "model", "model"]).frame
    assert frame["compute_budget"].tolist() == [1e18, 1e18, 1e19]
    assert frame["training_tokens"].tolist() == frame["tokens"].tolist() == [1e9, 2e9, 5e9]
    assert frame["model"].tolist() == frame["run"].tolist() == ["a", "b", "c"]
    assert list(frame.columns).count("model") == 1
    assert read_curves(path, keep=["compute"]).frame["compute"].tolist() == [1e18, 1e18, 1e19]
