"""Plots of a fitted law: log-log data and curve, or iso-loss contours over (N, D).

Both take ``ax=`` and return the Axes (see :mod:`scalekit.report._figures`);
``plan`` is the mapping of :func:`scalekit.fit.plan_for_compute` (``compute``,
``loss``, ``loss_pi`` and, for an (N, D) law, ``params`` and ``tokens``), drawn
as the requested point.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scalekit.compute import FLOPS_PER_PARAM_TOKEN, tokens_for_compute, training_flops
from scalekit.report._figures import axes, finish


def _band(result, X, kind):
    """The interval of ``kind`` at ``X``, or None when the fit has none."""
    try:
        lo, hi = result.interval(X, kind=kind)
    except (ValueError, RuntimeError):
        return None
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return (lo, hi) if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) else None


def _title(result, title: str | None, what: str) -> str:
    return f"{result.law.name}: {what}" + (f" ({title})" if title else "")


def plot_curve(result, x: np.ndarray, y: np.ndarray, path: str | Path | None = None, *,
               ax=None, x_label: str = "x", y_label: str = "loss",
               extend_to: float | None = None, plan: Mapping | None = None,
               title: str | None = None):
    """Data and fitted one-input law on log-log axes, with interval bands; returns the Axes.

    The part of the curve beyond the data (up to ``extend_to``, the plan's
    compute, or 10× the largest x) is dashed. ``plan`` (a compute plan of a
    law of compute) is drawn as a point with its prediction interval;
    ``title`` (such as a group name) is added to the title.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    ax, made = axes(ax, figsize=(6.4, 4.4))
    name = result.law.inputs[0]
    x_max = x.max()
    planned = None if plan is None else float(plan["compute"])
    top = max(extend_to or 0.0, planned or 0.0) or x_max * 10
    top = max(top, x_max)
    inside = np.geomspace(x.min(), x_max, 200)
    beyond = np.geomspace(x_max, top, 100)
    ax.scatter(x, y, s=14, color="0.25", label="data", zorder=3)
    grid = np.concatenate([inside, beyond[1:]])
    level = f"{result.ci_level:.0%}"
    for kind, alpha, label in (("prediction", 0.15, f"{level} prediction interval"),
                               ("confidence", 0.3, f"{level} confidence band")):
        band = _band(result, {name: grid}, kind)
        if band is not None:
            ax.fill_between(grid, *band, color="C0", alpha=alpha, lw=0, label=label)
    ax.plot(inside, result.predict({name: inside}), color="C0", label="fit")
    if top > x_max:
        ax.plot(beyond, result.predict({name: beyond}), color="C0", ls="--", label="extrapolation")
    if planned is not None:
        _plan_point(ax, planned, plan, f"plan: C = {planned:.3g}")
    ax.set(xscale="log", yscale="log", xlabel=x_label, ylabel=y_label,
           title=_title(result, title, result.law.formula))
    ax.legend(fontsize="small")
    finish(ax.figure, path, made)
    return ax


def _plan_point(ax, x: float, plan: Mapping, label: str) -> None:
    """The planned loss at ``x`` with its prediction interval (if finite)."""
    loss = float(plan["loss"])
    interval = plan.get("loss_pi")
    err = None
    if interval is not None and all(v is not None and np.isfinite(v) for v in interval):
        err = [[max(loss - interval[0], 0.0)], [max(interval[1] - loss, 0.0)]]
    ax.errorbar([x], [loss], yerr=err, fmt="*", ms=12, color="C3", mec="black", capsize=4,
                zorder=5, label=f"{label}, loss {loss:.4g}")


def efficient_frontier(result, compute: np.ndarray, n_range: tuple[float, float], *,
                       flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Loss-minimising ``(N, D)`` for each compute ``C = k·N·D``, searched over ``n_range``.

    The search grid reaches 1000× beyond ``n_range`` on both sides; a compute
    whose minimum lies at the edge of that grid (the law has no interior
    optimum there) is left out instead of being drawn at the edge, which would
    show as a vertical line.
    """
    n_fine = np.geomspace(n_range[0] / 1e3, n_range[1] * 1e3, 3000)
    tokens = tokens_for_compute(compute[:, None], n_fine,
                                flops_per_param_token=flops_per_param_token)
    losses = result.predict({"params": np.tile(n_fine, len(compute)),
                             "tokens": tokens.ravel()}).reshape(len(compute), -1)
    losses = np.where(np.isfinite(losses), losses, np.inf)
    index = np.argmin(losses, axis=1)
    interior = (index > 0) & (index < len(n_fine) - 1) & np.isfinite(losses.min(axis=1))
    best = n_fine[index[interior]]
    return best, tokens_for_compute(compute[interior], best,
                                    flops_per_param_token=flops_per_param_token)


def plot_surface(result, X: Mapping[str, np.ndarray], y: np.ndarray,
                 path: str | Path | None = None, *, ax=None,
                 flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN,
                 plan: Mapping | None = None, title: str | None = None):
    """Iso-loss contours of an L(N, D) law with the data and the efficient frontier.

    The contours, the data points and the colour bar share one colour scale.
    The frontier is the loss-minimising N for each compute C = k·N·D
    (k = ``flops_per_param_token``; see :func:`efficient_frontier`). ``plan``
    (from :func:`scalekit.fit.plan_for_compute`) is drawn at its (N*, D*), and
    the axes are widened to show it. Returns the Axes.
    """
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    ax, made = axes(ax, figsize=(6.4, 4.8))
    n, d = np.asarray(X["params"], float), np.asarray(X["tokens"], float)
    y = np.asarray(y, float)
    n_lo, n_hi, d_lo, d_hi = n.min() / 3, n.max() * 3, d.min() / 3, d.max() * 3
    if plan is not None:
        n_lo, n_hi = min(n_lo, plan["params"] / 3), max(n_hi, plan["params"] * 3)
        d_lo, d_hi = min(d_lo, plan["tokens"] / 3), max(d_hi, plan["tokens"] * 3)
    n_grid, d_grid = np.geomspace(n_lo, n_hi, 160), np.geomspace(d_lo, d_hi, 160)
    nn, dd = np.meshgrid(n_grid, d_grid)
    surface = result.predict({"params": nn.ravel(), "tokens": dd.ravel()}).reshape(nn.shape)
    finite = surface[np.isfinite(surface)]
    levels = np.unique(np.quantile(np.concatenate([finite, y]), np.linspace(0.02, 0.98, 14)))
    norm = Normalize(levels[0], levels[-1])
    contours = ax.contour(nn, dd, surface, levels=levels, cmap="viridis", norm=norm,
                          linewidths=0.8)
    ax.clabel(contours, fontsize=6, fmt="%.3g")
    ax.scatter(n, d, c=y, s=12, cmap="viridis", norm=norm, edgecolors="k", linewidths=0.2)
    bar = ax.figure.colorbar(ScalarMappable(norm, "viridis"), ax=ax, label="loss")
    bar.add_lines(contours)
    c_lo = training_flops(n_lo, d_lo, flops_per_param_token=flops_per_param_token)
    c_hi = training_flops(n_hi, d_hi, flops_per_param_token=flops_per_param_token)
    best_n, best_d = efficient_frontier(result, np.geomspace(c_lo, c_hi, 200), (n_lo, n_hi),
                                        flops_per_param_token=flops_per_param_token)
    ax.plot(best_n, best_d, color="C3", lw=2,
            label=f"efficient frontier (C = {flops_per_param_token:g}·N·D)")
    if plan is not None:
        ax.plot([plan["params"]], [plan["tokens"]], "*", ms=14, color="C3", mec="black",
                zorder=5, label=(f"plan: C = {plan['compute']:.3g}, N* = {plan['params']:.3g}, "
                                 f"D* = {plan['tokens']:.3g}"))
    ax.set(xscale="log", yscale="log", xlabel="parameters N", ylabel="tokens D",
           xlim=(n_lo, n_hi), ylim=(d_lo, d_hi),
           title=_title(result, title, "iso-loss contours"))
    ax.legend(fontsize="small", loc="best")
    finish(ax.figure, path, made)
    return ax


def _law_by_input(ax, result, ranges) -> None:
    """A law of several inputs (not N and D alone): the law along each input's fitted range,
    the other inputs at the middle (geometric) of theirs, against the input over its middle."""
    middle = {name: float(np.sqrt(np.prod(ranges[name]))) for name in result.law.inputs}
    for i, name in enumerate(result.law.inputs):
        x = np.geomspace(*ranges[name], 120)
        X = {other: np.full(x.size, middle[other]) for other in result.law.inputs}
        X[name] = x
        lo, hi = result.interval(X)
        ax.fill_between(x / middle[name], lo, hi, color=f"C{i}", alpha=0.2, lw=0)
        ax.plot(x / middle[name], result.predict(X), color=f"C{i}", lw=2,
                label=f"{name} (middle {middle[name]:.3g})")
    ax.set(xscale="log", xlabel="each input over the middle of its fitted range "
           "(the others at their middle)", ylabel="loss",
           title=_title(result, None, f"the fitted law, one input at a time "
                        f"({result.ci_level:.0%} bands)"))
    ax.legend(fontsize="small", loc="best")


def plot_law(result, path: str | Path | None = None, *, ax=None,
             flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN):
    """The fitted law alone (no data needed, so a saved fit can be drawn): a law of one input
    over its fitted range, a law of N and D along its efficient frontier (loss against
    compute), with the confidence band of the mean law. Returns the Axes."""
    ax, made = axes(ax, figsize=(6.4, 4.0))
    ranges = result.stats["input_range"]
    if set(result.law.inputs) == {"params", "tokens"}:
        (n_lo, n_hi), (d_lo, d_hi) = ranges["params"], ranges["tokens"]
        compute = np.geomspace(training_flops(n_lo, d_lo, flops_per_param_token=flops_per_param_token),
                               training_flops(n_hi, d_hi, flops_per_param_token=flops_per_param_token),
                               120)
        best_n, best_d = efficient_frontier(result, compute, (n_lo, n_hi),
                                            flops_per_param_token=flops_per_param_token)
        x = training_flops(best_n, best_d, flops_per_param_token=flops_per_param_token)
        X, label = {"params": best_n, "tokens": best_d}, f"compute C = {flops_per_param_token:g}·N·D (FLOPs)"
    elif len(result.law.inputs) > 1:
        _law_by_input(ax, result, ranges)
        finish(ax.figure, path, made)
        return ax
    else:
        (name,) = result.law.inputs
        x = np.geomspace(*ranges[name], 120)
        X, label = {name: x}, name
    lo, hi = result.interval(X)
    ax.fill_between(x, lo, hi, color="C0", alpha=0.25, lw=0,
                    label=f"{result.ci_level:.0%} confidence band")
    ax.plot(x, result.predict(X), color="C0", lw=2, label=result.equation(3))
    ax.set(xscale="log", xlabel=label, ylabel="loss",
           title=_title(result, None, "the fitted law" if len(result.law.inputs) == 1
                        else "loss on the efficient frontier"))
    ax.legend(fontsize="small", loc="best")
    finish(ax.figure, path, made)
    return ax
