"""Plots read at a glance: runs labelled by what tells them apart, plain tick labels on short
log axes, few runs on a forecast plot."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from scalekit.report.forecast_plots import drawn_runs, plot_forecasts, run_labels  # noqa: E402


def test_runs_are_labelled_by_what_differs_between_their_names():
    names = ["teacher_student-w4-d2-lr0.01-s0", "teacher_student-w8-d2-lr0.01-s0",
             "teacher_student-w8-d2-lr0.03-s0"]
    assert run_labels(names) == ["w4 lr0.01", "w8 lr0.01", "w8 lr0.03"]
    assert run_labels(["same", "same"]) == ["same", "same"]      # nothing differs: whole names


def test_a_forecast_plot_draws_few_runs_with_plain_ticks_and_short_labels():
    runs = [f"sweep-w{w}-lr0.01" for w in (4, 8, 16, 32, 64, 128, 256, 512)]
    steps = np.arange(1, 21) * 10.0
    observed = pd.DataFrame([{"run": r, "step": s, "loss": 2 + i * 0.1 + 3 * s ** -0.5}
                             for i, r in enumerate(runs) for s in steps])
    ahead = np.linspace(200, 2000, 10)
    table = pd.DataFrame([{"run": r, "x": x, **{f"q{q:g}": (2 + i * 0.1 + 3 * x ** -0.5)
                                                * (1 + (q - 0.5) * 0.05)
                                                for q in (0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975)}}
                          for i, r in enumerate(runs) for x in ahead])
    assert len(drawn_runs(table)[0]) == 5
    fig, ax = plt.subplots()
    plot_forecasts(observed, table, ax=ax)
    fig.canvas.draw()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(legend) == 5 and all(label.startswith("w") for label in legend)
    ticks = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)
             if t.get_text()]
    assert ticks and not any("times" in t or "^" in t for t in ticks)   # not 3×10⁰
    for line in ax.get_lines()[1::2]:           # each median starts at the run's last point
        assert line.get_xdata()[0] == steps[-1]
    plt.close(fig)
