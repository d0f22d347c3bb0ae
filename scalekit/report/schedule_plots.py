"""Plot of a schedule search: the rates of the chosen schedule and the baseline, and the
loss curves the fitted law predicts for them. Takes ``ax=`` (two Axes) and returns them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from scalekit.report._figures import axes, finish


def plot_schedule_search(curves: pd.DataFrame, path: str | Path | None = None, *, ax=None,
                         labels: dict | None = None):
    """``curves``: ``schedule``, ``step``, ``lr``, ``loss`` (one block per schedule);
    ``labels`` maps a schedule to its legend text."""
    (rate_ax, loss_ax), made = axes(ax, figsize=(10, 4), panels=2)
    for schedule, part in curves.groupby("schedule", sort=False):
        label = (labels or {}).get(schedule, schedule)
        rate_ax.plot(part["step"], part["lr"], label=label)
        loss_ax.plot(part["step"], part["loss"], label=label)
    rate_ax.set(xlabel="step", ylabel="learning rate", title="schedule")
    loss_ax.set(xlabel="step", ylabel="predicted loss", title="multi-power law prediction")
    tail = curves["loss"].quantile(0.05)
    loss_ax.set_ylim(curves["loss"].min() - 0.02 * abs(tail), curves["loss"].quantile(0.9))
    rate_ax.legend(fontsize=7)
    finish(rate_ax.figure, path, made)
    return rate_ax, loss_ax
