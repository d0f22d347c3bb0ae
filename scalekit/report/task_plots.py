"""Plots of the two-step task law (Bhagia et al. 2024): both steps, the runs and the target.

Each task takes a column of two panels: step 1, each run's final intermediate metric
against its tokens with the fitted law of its size, and step 2, the smoothed
checkpoints' accuracy against the intermediate metric with the fitted step-2 law. The
target is drawn on both, with its intervals, and its actual values when known.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalekit.laws import get_law
from scalekit.report._figures import finish, pyplot


def plot_task_law(result, path: str | Path | None = None, *, ax=None):
    """Draw every task of a task-law result (its ``to_dict()``). ``ax``: a (2, T) array of
    Axes to draw into. Returns the Figure."""
    body = result.to_dict()
    predictions = body["predictions"]
    made = ax is None
    if made:
        figure, ax = pyplot().subplots(2, len(predictions), squeeze=False, constrained_layout=True,
                                       figsize=(3.2 * len(predictions), 6.0))
    ax = np.asarray(ax).reshape(2, -1)
    for column, prediction in enumerate(predictions):
        _step1(ax[0, column], prediction, body)
        _step2(ax[1, column], prediction, body["x"])
    figure = ax[0, 0].figure
    finish(figure, path, made)
    return figure


def _step1(ax, prediction, body):
    data, values = prediction["data"], prediction["step1"]["values"]
    law = get_law("chinchilla")
    params, tokens, final = (np.asarray(data[k]) for k in ("params", "tokens", "final"))
    target_n, target_d = body["params"], body["tokens"]
    grid = np.geomspace(tokens.min() / 2, target_d * 2, 100)
    for index, size in enumerate(np.unique(params)):
        mine = params == size
        ax.scatter(tokens[mine], final[mine], s=14, color=f"C{index}",
                   label=f"N = {size:.3g}")
        ax.plot(grid, law.predict({"params": np.full_like(grid, size), "tokens": grid}, values),
                color=f"C{index}", lw=0.8)
    ax.plot(grid, law.predict({"params": np.full_like(grid, target_n), "tokens": grid}, values),
            color="k", lw=0.8, ls="--")
    low, high = _pair(prediction["intermediate_interval"])
    middle = prediction["intermediate"]
    ax.errorbar([target_d], [middle], yerr=[[middle - low], [high - middle]], fmt="*",
                color="k", ms=9, label="target (predicted)")
    if prediction.get("actual_intermediate") is not None:
        ax.scatter([target_d], [prediction["actual_intermediate"]], marker="x", color="r", s=40,
                   label="target (actual)", zorder=5)
    ax.set(xscale="log", xlabel="tokens D", ylabel=f"task {body['x']}",
           title=f"{prediction['task']}\nstep 1")
    ax.legend(fontsize=6)


def _pair(values) -> tuple[float, float]:
    """An interval as floats: a missing end (``null`` in a saved report) is NaN."""
    return tuple(np.nan if v is None else float(v) for v in values)


def _step2(ax, prediction, x_name):
    data, values = prediction["data"], prediction["step2"]["values"]
    law = get_law(prediction["step2"]["law"])
    xs = np.concatenate([np.asarray(v) for v in data["x"]])
    ys = np.concatenate([np.asarray(v) for v in data["accuracy"]])
    ax.scatter(xs, ys, s=4, color="0.55", alpha=0.5, label="checkpoints (fitted)")
    low_x = np.nanmin([xs.min(), _pair(prediction["intermediate_interval"])[0]]) * 0.9
    grid = np.linspace(low_x, xs.max() * 1.05, 200)
    ax.plot(grid, law.predict({"x": grid}, values), color="C0", label=law.name.replace("_", "-"))
    low, high = _pair(prediction["accuracy_interval"])
    middle = prediction["accuracy"]
    ax.errorbar([prediction["intermediate"]], [middle], yerr=[[middle - low], [high - middle]],
                fmt="*", color="k", ms=9, label="target (predicted)")
    if prediction.get("actual") is not None:
        ax.scatter([prediction["actual_intermediate"]], [prediction["actual"]], marker="x",
                   color="r", s=40, label="target (actual)", zorder=5)
    ax.set(xlabel=f"task {x_name}", ylabel="accuracy", title="step 2")
    ax.legend(fontsize=6)
