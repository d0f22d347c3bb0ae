"""Plots for the depth law and the inference-k curves; each takes ``ax=`` (see
:mod:`scalekit.report._figures`).

One-input laws such as ``class_count`` use :func:`scalekit.report.fit_plots.plot_curve`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scalekit.laws import DEPTH_TERMS as TERMS
from scalekit.report._figures import axes, finish, plain_log_ticks


def plot_depth_fit(result, X: Mapping[str, np.ndarray], y: np.ndarray,
                   path: str | Path | None = None, *, ax=None, plan: Mapping | None = None,
                   title: str | None = None):
    """Depth law fit: observed against predicted loss, and the depth term on its own.

    The right panel shows ``y`` minus the fitted width, data and floor terms
    against depth, with the fitted ``c_l l^-alpha_l``; the optimum depth of
    ``plan`` (if given) is marked. ``ax``: two Axes to draw into. Returns the Figure.
    """
    (left, right), made = axes(ax, figsize=(10, 4.2), panels=2)
    values = result.values
    predicted = result.predict(X)
    others = values["L0"] + sum(values[c] * X[column] ** -values[a]
                                for c, a, column in TERMS if column != "depth")
    left.scatter(predicted, y, s=12, color="0.25")
    span = np.array([min(predicted.min(), y.min()), max(predicted.max(), y.max())])
    left.plot(span, span, color="C0")
    left.set(xscale="log", yscale="log", xlabel="predicted loss", ylabel="observed loss",
             title=f"{result.law.name} ({len(y)} points)" + (f", {title}" if title else ""))
    depth = X["depth"]
    right.scatter(depth, y - others, s=12, color="0.25", label="loss − other terms")
    grid = np.geomspace(depth.min(), depth.max(), 100)
    right.plot(grid, values["c_l"] * grid ** -values["alpha_l"], color="C0",
               label=rf"$c_l\,l^{{-\alpha_l}}$, $\alpha_l$ = {values['alpha_l']:.2f}")
    if plan is not None:
        right.axvline(plan["depth"], color="C1", ls="--", label=f"optimum depth {plan['depth']:.0f}")
    right.set(xscale="log", xlabel="depth l (layers)", ylabel="depth term")
    plain_log_ticks(left, "both")
    plain_log_ticks(right, "x")
    right.legend(fontsize="small")
    figure = left.figure
    finish(figure, path, made)
    return figure


def plot_inference_k(ks, errors, path: str | Path | None = None, *, ax=None, stderr=None,
                     theory=None, result=None, plan: Mapping | None = None,
                     label: str = "measured", title: str | None = None):
    """Error against the number of samples k: measurements, theory curve, fitted law.

    Returns the Axes."""
    ks, errors = np.asarray(ks, float), np.asarray(errors, float)
    ax, made = axes(ax, figsize=(6.4, 4.4))
    ax.errorbar(ks, errors, yerr=stderr, fmt="o", ms=4, color="0.25", label=label)
    if theory is not None:
        ax.plot(ks, theory, color="C2", label="theory (quadrature)")
    if result is not None:
        grid = np.geomspace(ks.min(), ks.max() * 4, 200)
        ax.plot(grid, result.predict({"k": grid}), color="C0", label=result.law.formula)
        k_opt = result.derived.get("k_opt")
        if k_opt is not None:
            ax.axvline(k_opt, color="C0", ls=":", label=f"fitted optimum k = {k_opt:.1f}")
    if plan is not None:
        ax.axvline(plan["k"], color="C1", ls="--", label=f"k with sample cost: {plan['k']}")
    ax.set(xscale="log", yscale="log", xlabel="samples k", ylabel="error", title=title or "")
    ax.legend(fontsize="small")
    finish(ax.figure, path, made)
    return ax
