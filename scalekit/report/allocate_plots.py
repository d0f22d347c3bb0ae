"""Plots of allocations: each policy's loss-compute frontier against the exhaustive one,
and the Successive Halving rung diagram of which runs were promoted.

matplotlib is imported inside the functions (Agg backend), so importing this
module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_frontiers(ax, sweep, allocations: Mapping[str, object]) -> None:
    """Step lines of the frontier of every allocation's points, and of all points (exhaustive)."""
    from scalekit.allocate.metrics import frontier_points

    for run, curve in sweep.curves.items():
        ax.plot(curve.compute, curve.loss, color="0.85", lw=0.8, zorder=0)
    compute, loss = frontier_points(sweep.curves)
    ax.step(compute, loss, where="post", color="black", lw=2.0, label="exhaustive")
    for name, allocation in allocations.items():
        if name == "exhaustive":
            continue
        compute, loss = frontier_points(allocation.observed)
        if len(compute):
            spent = allocation.spent / sweep.total_compute()
            ax.step(compute, loss, where="post", lw=1.3, label=f"{name} ({spent:.1%} of FLOPs)")
    ax.set_xscale("log")
    ax.set_xlabel("compute (FLOPs)")
    ax.set_ylabel("loss")
    ax.set_title("loss-compute frontier")
    ax.legend(fontsize=8)


def plot_rungs(ax, sweep, allocation, bracket, *, title: str = "") -> None:
    """Resource reached by every run at every rung; lines end where a run was dropped."""
    import matplotlib.cm as cm

    params = np.array([sweep.params.get(r, np.nan) for r in allocation.reached], float)
    finite = np.isfinite(params)
    lo, hi = (np.log(params[finite]).min(), np.log(params[finite]).max()) if finite.any() else (0, 1)
    by_rung = {}
    for advance in allocation.advances:
        by_rung.setdefault(advance.run, {})[advance.rung] = advance.stop
    for i, (run, rungs) in enumerate(by_rung.items()):
        shade = (np.log(sweep.params[run]) - lo) / max(hi - lo, 1e-12) if np.isfinite(
            sweep.params.get(run, np.nan)) else 0.5
        steps = sorted(rungs)
        ax.plot(steps, [rungs[k] for k in steps], "-o", ms=3, lw=1,
                color=cm.viridis(shade), alpha=0.8)
    ax.set_yscale("log")
    ax.set_xticks([r.index for r in bracket.rungs])
    ax.set_xlabel("rung")
    ax.set_ylabel(f"{sweep.resource_name} reached")
    ax.set_title(title or "promotions (colour: log N, yellow = largest)")


def plot_allocations(sweep, allocations: Mapping[str, tuple], path: str | Path, *,
                     rung_policy: str | None = None) -> None:
    """Save the frontier panel and the rung diagram of ``rung_policy`` to ``path``.

    ``allocations`` maps a policy name to ``(allocation, bracket)`` (bracket is
    None for ``uniform`` and ``exhaustive``).
    """
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    plot_frontiers(left, sweep, {name: pair[0] for name, pair in allocations.items()})
    halving = [name for name, pair in allocations.items() if pair[1] is not None]
    name = rung_policy if rung_policy in halving else (halving[-1] if halving else None)
    if name is not None:
        allocation, bracket = allocations[name]
        plot_rungs(right, sweep, allocation, bracket, title=f"rungs of policy {name!r}")
    else:
        right.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
