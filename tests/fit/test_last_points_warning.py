"""A sweep over sizes at one token count: its last points cannot pin the tokens term, the
checkpoints before them can; the fit says so first and names `--all-points` (issue 22,
item 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.fit._frame import prepare_fit
from scalekit_cli.app import main

SIZES = np.geomspace(1e7, 1e9, 6)


def _sweep(final_tokens):
    rows = []
    for i, (n, d_end) in enumerate(zip(SIZES, final_tokens, strict=True)):
        for step, d in enumerate(np.geomspace(d_end / 100, d_end, 8), 1):
            rows.append({"run": f"r{i}", "step": step, "params": n, "tokens": d,
                         "loss": 1.7 + 400 / n ** 0.34 + 410 / d ** 0.28})
    return pd.DataFrame(rows)


def test_runs_ending_at_one_token_count_are_warned_first():
    prepared = prepare_fit(_sweep([1e10] * len(SIZES)), law="chinchilla")
    first = prepared.diagnostics[0]
    assert (first.code, first.severity, first.param) == ("last_points_narrow", "warning", "tokens")
    assert "`all_points`" in first.message and first.value == 1.0
    assert not prepare_fit(_sweep([1e10] * len(SIZES)), law="chinchilla",
                           all_points=True).diagnostics


def test_runs_ending_at_twenty_tokens_per_parameter_are_not_warned():
    assert not prepare_fit(_sweep(20 * SIZES), law="chinchilla").diagnostics


def test_the_cli_names_the_flag(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    _sweep([1e10] * len(SIZES)).to_csv(path, index=False)
    assert main(["fit", str(path), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "fit every checkpoint with `--all-points`" in " ".join(out.split())
