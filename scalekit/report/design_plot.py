"""Plot of a design: the candidate runs, the ones chosen (numbered in order) and the
target rows, over the first two inputs of the law (log axes where positive).

It reads what a design result's ``to_dict()`` carries: ``law["inputs"]`` and
``chosen`` (``row`` into the pool frame, in order).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scalekit.report._figures import axes, finish

#: The most candidates drawn; a larger pool is shown by a random sample of this many.
MAX_DRAWN = 2_000


def plot_design(result: dict, pool, target, *, ax=None, path: str | Path | None = None):
    """Candidates (grey; a random :data:`MAX_DRAWN` of a larger pool), chosen runs (numbered),
    targets (stars). Returns the Axes."""
    ax, made = axes(ax, figsize=(6, 4.5))
    inputs = list(result["law"]["inputs"])
    xname, yname = inputs[0], inputs[min(1, len(inputs) - 1)]
    x, y = pool[xname].to_numpy(float), pool[yname].to_numpy(float)
    drawn = np.arange(x.size)
    if x.size > MAX_DRAWN:  # a summary of a large pool: a page of 10^6 dots weighs 100 MB
        drawn = np.sort(np.random.default_rng(0).choice(x.size, MAX_DRAWN, replace=False))
    ax.scatter(x[drawn], y[drawn], s=10, color="0.75",
               label="candidates" if drawn.size == x.size else
               f"candidates ({drawn.size:,} of {x.size:,} drawn at random)")
    rows = np.array([c["row"] for c in result["chosen"]], dtype=int)
    if len(rows):
        ax.scatter(x[rows], y[rows], s=28, color="C0", label="chosen")
        for k, row in enumerate(rows[:40], 1):
            ax.annotate(str(k), (x[row], y[row]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.scatter(target[xname].to_numpy(float), target[yname].to_numpy(float), marker="*",
               s=90, color="C3", label="target")
    for axis, values in ((ax.set_xscale, np.r_[x, target[xname]]),
                         (ax.set_yscale, np.r_[y, target[yname]])):
        if (np.asarray(values, float) > 0).all():
            axis("log")
    ax.set_xlabel(xname)
    ax.set_ylabel(yname)
    ax.set_title(f"{result['method']}: {len(rows)} runs, "
                 f"{100 * result['spent']:.2g}% of the pool's cost")
    ax.legend(fontsize=8)
    finish(ax.figure, path, made)
    return ax
