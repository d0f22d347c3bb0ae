"""The fit report opens with the answer, and a fit a careful researcher accepts prints no warning."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from scalekit.diagnostics import Diagnostic
from scalekit.fit import fit_law
from scalekit_cli.app import main

REPO = Path(__file__).resolve().parents[2]
CHINCHILLA = REPO / "data" / "published" / "chinchilla_epoch_svg.csv"


def _surface(truth, noise, seed):
    rng = np.random.default_rng(seed)
    n, d = np.meshgrid(np.geomspace(1e7, 1e10, 7), np.geomspace(1e9, 1e12, 7))
    n, d = n.ravel(), d.ravel()
    loss = truth[0] + truth[1] / n ** truth[3] + truth[2] / d ** truth[4]
    return {"params": n, "tokens": d}, loss * np.exp(noise * rng.standard_normal(n.size))


@pytest.mark.parametrize("truth, noise, seed", [
    ((1.69, 406.4, 410.7, 0.34, 0.28), 0.01, 0),      # Hoffmann et al. (2022)
    ((1.82, 482.0, 2085.0, 0.347, 0.367), 0.01, 1),   # Besiroglu et al. (2024)
    ((2.5, 50.0, 300.0, 0.25, 0.30), 0.005, 2),
])
def test_a_well_posed_synthetic_surface_fits_with_no_warning(truth, noise, seed):
    X, y = _surface(truth, noise, seed)
    fit = fit_law("chinchilla", X, y, bootstrap=100, seed=seed)
    assert [d.line() for d in fit.diagnostics if d.severity != "info"] == []
    assert fit.values["alpha"] == pytest.approx(truth[3], abs=0.05)


def test_the_written_law_computes_what_the_fit_predicts():
    X, y = _surface((1.82, 482.0, 2085.0, 0.347, 0.367), 0.01, 1)
    fit = fit_law("chinchilla", X, y)
    lhs, rhs = fit.equation(digits=12).split(" = ", 1)
    assert lhs == "L(N, D)"
    n, d = 3e9, 7e10
    value = eval(rhs.replace("^", "**"), {"N": n, "D": d})   # noqa: S307 - our own numbers
    assert value == pytest.approx(fit.predict({"params": [n], "tokens": [d]})[0], rel=1e-9)


def test_the_readme_main_job_prints_the_answer_first_and_no_warning(capsys):
    assert main(["fit", str(CHINCHILLA), "--drop-top", "5", "--target-compute", "1e22",
                 "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    law = re.fullmatch(r"L\(N, D\) = ([\d.]+) \+ ([\d.]+) / N\^([\d.]+) \+ ([\d.]+) / D\^([\d.]+)",
                       lines[0])
    assert law, lines[0]
    e, alpha, beta = float(law[1]), float(law[3]), float(law[5])
    assert (e, alpha, beta) == pytest.approx((1.8172, 0.3473, 0.3672), abs=1e-3)  # Besiroglu
    order = [out.index(s) for s in ("Plan at compute", "Parameters", "Fit statistics")]
    assert order == sorted(order)
    assert "warning:" not in out and "p_unseen" not in out and "n_starts_grid" not in out
    planned = float(re.search(r"loss \(a new run\)\s+([\d.]+) \[([\d.]+),", out)[2])
    assert planned > e + 0.015          # the plan's low end above the floor by more than the noise


def test_verbose_shows_the_optimiser_and_every_note(capsys):
    assert main(["fit", str(CHINCHILLA), "--drop-top", "5", "--bootstrap", "0", "-v"]) == 0
    out = capsys.readouterr().out
    assert "p_unseen" in out and "n_starts_grid" in out and "tokens derived" in out


def test_at_most_three_warnings_worst_first_then_how_many_more():
    from rich.console import Console

    from scalekit.report._fit_report import fit_renderables

    X, y = _surface((1.82, 482.0, 2085.0, 0.347, 0.367), 0.01, 1)
    fit = fit_law("chinchilla", X, y)
    fit.diagnostics = ([Diagnostic("extrapolation", "warning", f"far {i}") for i in range(3)]
                       + [Diagnostic("outliers_dropped", "info", "dropped"),
                          Diagnostic("not_identified", "warning", "E is loose"),
                          Diagnostic("not_converged", "error", "no optimum")])
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(fit_renderables(fit, notes=["read a file"], more="{n} more {what}"))
    text = console.file.getvalue()
    tail = text[text.index("Notes and warnings"):].splitlines()[1:]
    assert tail == ["note: read a file (1 more notes)", "error: no optimum",
                    "warning: E is loose", "warning: far 0", "2 more warnings"]


def test_objective_is_the_option_and_loss_an_alias_that_says_so(tmp_path, capsys):
    X, y = _surface((1.82, 482.0, 2085.0, 0.347, 0.367), 0.01, 1)
    import pandas as pd

    path = tmp_path / "points.csv"
    pd.DataFrame({**X, "loss": y}).to_csv(path, index=False)
    reports = []
    for flag in ("--objective", "--loss"):
        out = tmp_path / f"{flag[2:]}.json"
        assert main(["fit", str(path), flag, "squared", "--bootstrap", "0", "--json", str(out)]) == 0
        reports.append(__import__("json").loads(out.read_text()))
        err = capsys.readouterr().err
        assert ("--loss is now --objective" in err) == (flag == "--loss")
    assert reports[0]["stats"]["loss"] == reports[1]["stats"]["loss"] == "squared"
    assert reports[0]["params"] == reports[1]["params"]


@pytest.mark.parametrize("command", [["fit"], ["plan", "--compute", "1e9"]])
def test_the_metric_choice_is_said_once(command, tmp_path, capsys):
    """The bundled sample logs `loss` and `train_loss`: the report says which it took in one
    line (the metric_choice diagnostic), and the JSON holds it once, as that diagnostic."""
    import json

    out = tmp_path / "r.json"
    assert main([command[0], str(REPO / "data" / "sample_curves.csv"), *command[1:],
                 "--bootstrap", "0", "--verbose", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    said = [line for line in (printed.out + printed.err).splitlines() if "'train_loss'" in line]
    assert len(said) == 1 and "'loss'" in said[0]
    report = json.loads(out.read_text())
    assert not any("train_loss" in note for note in report["notes"])
    assert [d["code"] for d in report["diagnostics"]].count("metric_choice") == 1
