"""Plots of a fitted law: log-log data and curve, or iso-loss contours over (N, D).

matplotlib is imported inside the functions (Agg backend), so importing this
module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _band(result, X, kind):
    """The interval of ``kind`` at ``X``, or None when the fit has none."""
    try:
        lo, hi = result.interval(X, kind=kind)
    except (ValueError, RuntimeError):
        return None
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return (lo, hi) if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) else None


def plot_curve(result, x: np.ndarray, y: np.ndarray, path: str | Path, *,
               x_label: str = "x", y_label: str = "loss", extend_to: float | None = None) -> None:
    """Data and fitted one-input law on log-log axes, with interval bands.

    The part of the curve beyond the data (up to ``extend_to``, or 10× the
    largest x) is dashed.
    """
    plt = _figure()
    name = result.law.inputs[0]
    x_max = x.max()
    top = max(extend_to or x_max * 10, x_max)
    inside = np.geomspace(x.min(), x_max, 200)
    beyond = np.geomspace(x_max, top, 100)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    ax.scatter(x, y, s=14, color="0.25", label="data", zorder=3)
    grid = np.concatenate([inside, beyond[1:]])
    level = f"{result.ci_level:.0%}"
    for kind, alpha, label in (("prediction", 0.15, f"{level} prediction interval"),
                               ("confidence", 0.3, f"{level} confidence band")):
        band = _band(result, {name: grid}, kind)
        if band is not None:
            ax.fill_between(grid, *band, color="C0", alpha=alpha, lw=0, label=label)
    ax.plot(inside, result.predict({name: inside}), color="C0", label="fit")
    ax.plot(beyond, result.predict({name: beyond}), color="C0", ls="--", label="extrapolation")
    ax.set(xscale="log", yscale="log", xlabel=x_label, ylabel=y_label,
           title=f"{result.law.name}: {result.law.formula}")
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_surface(result, X: Mapping[str, np.ndarray], y: np.ndarray, path: str | Path, *,
                 flops_per_param_token: float = 6.0) -> None:
    """Iso-loss contours of an L(N, D) law with the data and the efficient frontier.

    The frontier is the loss-minimising N for each compute C = k·N·D
    (k = ``flops_per_param_token``), found on a fine grid of N.
    """
    plt = _figure()
    n, d = np.asarray(X["params"], float), np.asarray(X["tokens"], float)
    n_grid = np.geomspace(n.min() / 3, n.max() * 3, 160)
    d_grid = np.geomspace(d.min() / 3, d.max() * 3, 160)
    nn, dd = np.meshgrid(n_grid, d_grid)
    surface = result.predict({"params": nn.ravel(), "tokens": dd.ravel()}).reshape(nn.shape)
    fig, ax = plt.subplots(figsize=(6.4, 4.8), constrained_layout=True)
    levels = np.quantile(surface[np.isfinite(surface)], np.linspace(0.02, 0.98, 14))
    contours = ax.contour(nn, dd, surface, levels=np.unique(levels), cmap="viridis", linewidths=0.8)
    ax.clabel(contours, fontsize=6, fmt="%.3g")
    points = ax.scatter(n, d, c=y, s=12, cmap="viridis", edgecolors="k", linewidths=0.2)
    fig.colorbar(points, ax=ax, label="loss")
    compute = np.geomspace((n * d).min(), (n * d).max() * 10, 60) * flops_per_param_token
    n_fine = np.geomspace(n_grid[0], n_grid[-1] * 10, 2000)
    losses = result.predict({"params": np.tile(n_fine, len(compute)),
                             "tokens": (compute[:, None] / flops_per_param_token / n_fine).ravel()})
    best = n_fine[np.nanargmin(losses.reshape(len(compute), -1), axis=1)]
    ax.plot(best, compute / flops_per_param_token / best, color="C3", lw=2,
            label=f"efficient frontier (C = {flops_per_param_token:g}·N·D)")
    ax.set(xscale="log", yscale="log", xlabel="parameters N", ylabel="tokens D",
           xlim=(n_grid[0], n_grid[-1]), ylim=(d_grid[0], d_grid[-1]),
           title=f"{result.law.name}: iso-loss contours")
    ax.legend(fontsize="small", loc="upper right")
    fig.savefig(path, dpi=120)
    plt.close(fig)
