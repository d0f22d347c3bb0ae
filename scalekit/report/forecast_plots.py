"""Plot of learning-curve forecasts: observed prefix, median, quantile bands, truth.

Takes ``ax=`` and returns the Axes (see :mod:`scalekit.report._figures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.report._figures import axes, finish, plain_log_ticks, pyplot

BANDS = ((0.025, 0.975, 0.15), (0.1, 0.9, 0.25), (0.25, 0.75, 0.4))


def run_labels(names: Sequence[str]) -> list[str]:
    """Each run's name without the parts every name shares (``teacher-w4-lr0.01`` and
    ``teacher-w8-lr0.01`` read ``w4`` and ``w8``): what tells the runs apart. A name
    left empty keeps its whole self."""
    import re

    parts = [re.split(r"[-_/,;:= ]+", str(name)) for name in names]
    shared = set.intersection(*(set(p) for p in parts)) if parts else set()
    return [" ".join(p for p in split if p not in shared) or str(name)
            for name, split in zip(names, parts, strict=True)]


def drawn_runs(forecasts: pd.DataFrame, runs: Sequence[str] | None = None, *,
               max_runs: int = 5) -> tuple[list[str], list[str]]:
    """The runs a forecast plot shows, and a note on those it leaves out.

    ``runs`` given: exactly those (all of them, in that order). Otherwise all
    runs if there are at most ``max_runs``; else ``max_runs`` runs spread
    evenly over the ranking of their final median forecast, from the lowest
    to the highest, so that the plot shows the whole range of outcomes.
    """
    if runs:
        return [str(r) for r in runs], []
    final = forecasts.sort_values("x").groupby("run")["q0.5"].last().sort_values(kind="stable")
    names = [str(r) for r in final.index]
    if len(names) <= max_runs:
        return names, []
    picked = np.unique(np.round(np.linspace(0, len(names) - 1, max_runs)).astype(int))
    note = (f"{len(names) - len(picked)} of {len(names)} runs not drawn; the plot shows "
            f"{len(picked)} spread from the lowest to the highest final forecast "
            "(choose them as `runs`)")
    return [names[i] for i in picked], [note]


def plot_forecasts(observed: pd.DataFrame, forecasts: pd.DataFrame,
                   path: str | Path | None = None, *, ax=None, x: str = "step",
                   y: str = "loss", truth: pd.DataFrame | None = None,
                   runs: Sequence[str] | None = None, max_runs: int = 5,
                   title: str | None = None):
    """Draw each run's observed points, forecast median and 50/80/95% bands (log-log).

    Parameters
    ----------
    observed : DataFrame
        ``run``, ``x`` and ``y`` columns: what the surrogate saw.
    forecasts : DataFrame
        From :func:`scalekit.surrogates._forecast.forecast_frame`: ``run``, ``x``
        and quantile columns ``q0.025`` … ``q0.975``.
    truth : DataFrame, optional
        Held-out points (``run``, ``x``, ``y``), drawn as open circles.
    runs, max_runs
        Which runs are drawn: see :func:`drawn_runs`.
    title : str, optional
        Replaces the default title (which says what the bands are).

    Returns
    -------
    matplotlib Axes
    """
    ax, made = axes(ax, figsize=(7, 4.5))
    shown, _ = drawn_runs(forecasts, runs, max_runs=max_runs)
    colours = pyplot().rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "o^sDvP*X"
    for i, (run, label) in enumerate(zip(shown, run_labels(shown), strict=True)):
        colour = colours[i % len(colours)]
        seen = observed[observed["run"].astype(str) == run].sort_values(x)
        ahead = forecasts[forecasts["run"].astype(str) == run].sort_values("x")
        if seen.empty or ahead.empty:
            continue
        ax.plot(seen[x], seen[y], markers[i % len(markers)], color=colour, ms=3, label=label)
        start = seen.iloc[[-1]]
        xs = np.concatenate([start[x].to_numpy(float), ahead["x"].to_numpy(float)])
        for lo, hi, alpha in BANDS:
            low = np.concatenate([start[y].to_numpy(float), ahead[f"q{lo:g}"].to_numpy(float)])
            high = np.concatenate([start[y].to_numpy(float), ahead[f"q{hi:g}"].to_numpy(float)])
            ax.fill_between(xs, low, high, color=colour, alpha=alpha, lw=0)
        median = np.concatenate([start[y].to_numpy(float), ahead["q0.5"].to_numpy(float)])
        ax.plot(xs, median, "-", color=colour, lw=1.2)
        if truth is not None:
            held = truth[truth["run"].astype(str) == run]
            ax.plot(held[x], held[y], markers[i % len(markers)], mfc="none", color=colour, ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax, "y")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or "forecast: median and 50/80/95% bands"
                 + ("; open markers: held-out truth" if truth is not None else ""))
    ax.legend(fontsize=7, loc="best")
    finish(ax.figure, path, made)
    return ax


def plot_scores(table: pd.DataFrame, path: str | Path | None = None, *, ax=None,
                title: str | None = None):
    """The forecast evaluation at a glance: each method's mean absolute log error of the
    final value (bars, log scale) at every cut of the runs, from
    :meth:`~scalekit.surrogates._scores.ForecastScores.to_frame` (``method``, ``subset``,
    ``final_log_err``). Returns the Axes."""
    ax, made = axes(ax, figsize=(7, 4.0))
    cuts = [s for s in dict.fromkeys(table["subset"]) if s != "all"] or ["all"]
    methods = list(dict.fromkeys(table["method"]))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        rows = table[table["method"] == method].set_index("subset")
        values = [rows["final_log_err"].get(cut, np.nan) for cut in cuts]
        ax.bar(np.arange(len(cuts)) + (i - (len(methods) - 1) / 2) * width, values, width,
               label=method)
    ax.set_xticks(np.arange(len(cuts)), cuts)
    ax.set_yscale("log")
    plain_log_ticks(ax, "y")
    ax.set_xlabel("where each run was cut (share of its last x)")
    ax.set_ylabel("|log error| of the final value")
    ax.set_title(title or "forecast error by method (lower is better)")
    ax.legend(fontsize=7, loc="best")
    finish(ax.figure, path, made)
    return ax
