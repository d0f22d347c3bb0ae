"""Plot of an optimal learning-rate and batch-size fit: each cell's optimum and the laws.

Two panels, the optimal learning rate and the optimal batch against tokens D: each (N, D)
cell's fitted optimum (hollow where that axis is not bracketed), the law's value at the
cells of each N joined by a line, and the recommendation with its interval where there is
one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalekit.report._figures import finish, pyplot


def plot_hparams(result, path: str | Path | None = None, *, ax=None):
    """Draw ``result`` (an ``HparamsFit``). ``ax``: two Axes to draw into. Returns the
    Figure."""
    made = ax is None
    if made:
        figure, ax = pyplot().subplots(1, 2, constrained_layout=True, figsize=(9.0, 3.8))
    ax = np.ravel(ax)
    cells, r = result.cells, result.recommendation
    params = np.array([c["params"] for c in cells])
    for panel, name, label in ((ax[0], "lr", "optimal learning rate"),
                               (ax[1], "batch", "optimal batch")):
        for index, size in enumerate(np.unique(params)):
            mine = sorted((c for c in cells if c["params"] == size), key=lambda c: c["tokens"])
            tokens = np.array([c["tokens"] for c in mine])
            inside = np.array([c[f"bracketed_{name}"] for c in mine])
            values = np.array([c[name] for c in mine])
            colour = f"C{index % 10}"
            panel.scatter(tokens[inside], values[inside], s=16, color=colour,
                          label=f"N = {size:.3g}")
            panel.scatter(tokens[~inside], values[~inside], s=16, facecolors="none",
                          edgecolors=colour)
            panel.plot(tokens, [c[f"{name}_law"] for c in mine], color=colour, lw=0.8)
        if r is not None and r.get(name) is not None:
            low, high = r.get(f"{name}_interval") or (r[name], r[name])
            panel.errorbar([r["tokens"]], [r[name]], yerr=[[r[name] - low], [high - r[name]]],
                           fmt="*", color="k", ms=10, label=f"target N = {r['params']:.3g}")
        panel.set(xscale="log", yscale="log", xlabel="tokens D", ylabel=label)
    ax[0].legend(fontsize=6)
    figure = ax[0].figure
    finish(figure, path, made)
    return figure
