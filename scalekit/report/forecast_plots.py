"""Plot of learning-curve forecasts: observed prefix, median, quantile bands, truth.

matplotlib is imported inside the function (Agg backend), so importing this
module costs nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BANDS = ((0.025, 0.975, 0.15), (0.1, 0.9, 0.25), (0.25, 0.75, 0.4))


def plot_forecasts(observed: pd.DataFrame, forecasts: pd.DataFrame, path: str | Path, *,
                   x: str = "step", y: str = "loss", truth: pd.DataFrame | None = None,
                   max_runs: int = 8, title: str | None = None) -> list[str]:
    """Draw each run's observed points, forecast median and 50/80/95% bands (log-log).

    Parameters
    ----------
    observed : DataFrame
        ``run``, ``x`` and ``y`` columns: what the surrogate saw.
    forecasts : DataFrame
        From :func:`scalekit.surrogates.forecast.forecast_frame`: ``run``, ``x``
        and quantile columns ``q0.025`` … ``q0.975``.
    truth : DataFrame, optional
        Held-out points (``run``, ``x``, ``y``), drawn as open circles.
    max_runs : int
        At most this many runs are drawn (the first by name); the rest are listed
        in the returned notes.

    Returns
    -------
    list of str
        Notes (runs left out).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted(forecasts["run"].unique())
    notes = [f"{len(runs) - max_runs} runs not drawn"] if len(runs) > max_runs else []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, run in enumerate(runs[:max_runs]):
        colour = colours[i % len(colours)]
        seen = observed[observed["run"] == run]
        ax.plot(seen[x], seen[y], ".", color=colour, ms=4, label=str(run))
        ahead = forecasts[forecasts["run"] == run].sort_values("x")
        start = seen.sort_values(x).iloc[[-1]]
        xs = np.concatenate([start[x].to_numpy(float), ahead["x"].to_numpy(float)])
        for lo, hi, alpha in BANDS:
            low = np.concatenate([start[y].to_numpy(float), ahead[f"q{lo:g}"].to_numpy(float)])
            high = np.concatenate([start[y].to_numpy(float), ahead[f"q{hi:g}"].to_numpy(float)])
            ax.fill_between(xs, low, high, color=colour, alpha=alpha, lw=0)
        median = np.concatenate([start[y].to_numpy(float), ahead["q0.5"].to_numpy(float)])
        ax.plot(xs, median, "-", color=colour, lw=1.2)
        if truth is not None:
            held = truth[truth["run"] == run]
            ax.plot(held[x], held[y], "o", mfc="none", color=colour, ms=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or "forecast: median and 50/80/95% bands"
                 + ("; open circles: held-out truth" if truth is not None else ""))
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return notes
