"""The figure of a two-arm comparison: both compute-optimal frontiers with their bands, and
the compute multiplier k against compute with its band.

Reads the result through ``to_dict()`` (``curves``, ``optima``, ``targets``, the arms'
names); takes ``ax=`` (two Axes) and returns the Figure (see :mod:`scalekit.report._figures`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalekit.report._figures import axes, finish, plain_log_ticks


def plot_comparison(result, path: str | Path | None = None, *, ax=None):
    """Left: L*(C) of both arms (lines, bands) and the budgets' minima (dots); right: k(C)
    with its band, 1 dashed, the targets marked with their intervals. Returns the Figure."""
    body = result.to_dict()
    rows, optima = body["curves"], body["optima"]
    ax, made = axes(ax, figsize=(12.8, 4.8), panels=2)
    left, right = np.atleast_1d(ax)
    c = np.array([r["compute"] for r in rows])

    def column(name):
        return np.array([np.nan if r[name] is None else r[name] for r in rows], dtype=float)

    for arm, colour in (("baseline", "C0"), ("variant", "C1")):
        label = body[arm]
        left.plot(c, column(f"loss_{arm}"), color=colour, lw=1.5, label=f"{arm}: {label}")
        left.fill_between(c, column(f"loss_{arm}_lo"), column(f"loss_{arm}_hi"), color=colour,
                          alpha=0.2)
        dots = [o for o in optima if o["arm"] == label]
        left.plot([o["compute"] for o in dots], [o["loss"] for o in dots], "o", color=colour,
                  ms=4)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("compute C (FLOPs)")
    left.set_ylabel("compute-optimal loss L*(C)")
    left.set_title(f"Frontiers ({body['law']} law), {100 * body['ci_level']:g}% bands")
    left.legend(fontsize=8)
    right.plot(c, column("multiplier"), color="C2", lw=1.5, label="k(C)")
    right.fill_between(c, column("multiplier_lo"), column("multiplier_hi"), color="C2",
                       alpha=0.2)
    right.axhline(1.0, color="grey", ls="--", lw=1)
    for t in body["targets"]:
        lo, hi = t["multiplier_interval"]
        if t["multiplier"] is not None and lo is not None and hi is not None:
            right.errorbar([t["compute"]], [t["multiplier"]],
                           yerr=[[t["multiplier"] - lo], [hi - t["multiplier"]]], fmt="s",
                           color="k", ms=4, capsize=3)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("compute C (FLOPs)")
    right.set_ylabel(f"compute multiplier k of {body['variant']} over {body['baseline']}")
    right.set_title("k > 1: the variant is better")
    plain_log_ticks(left)
    plain_log_ticks(right)
    figure = left.figure
    finish(figure, path, made)
    return figure
