"""Plots of allocations: each policy's loss-compute frontier against the exhaustive one,
and the Successive Halving rung diagram of which runs were promoted.

They read what the allocation results carry: a sweep's ``curves`` (objects
with ``compute`` and ``loss`` arrays), ``params`` and ``total_compute()``; an
allocation's ``observed`` curves, ``spent`` FLOPs and ``advances`` (``run``,
``rung``, ``stop``); a bracket's ``rungs`` (``index``). Each takes ``ax=``
(see :mod:`scalekit.report._figures`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scalekit.report._figures import axes, finish

#: One (line style, marker) per policy, so that policies differ without colour.
STYLES = (("-", "o"), ("--", "s"), ("-.", "^"), (":", "D"), ((0, (5, 1, 1, 1)), "v"))


def _staircase(curves) -> tuple[np.ndarray, np.ndarray]:
    """Lowest loss reached at or below each compute, over all points of ``curves``."""
    compute = np.concatenate([np.asarray(c.compute, float) for c in curves] or [np.empty(0)])
    loss = np.concatenate([np.asarray(c.loss, float) for c in curves] or [np.empty(0)])
    order = np.argsort(compute, kind="stable")
    return compute[order], np.minimum.accumulate(loss[order]) if len(loss) else loss


def plot_frontiers(sweep, allocations: Mapping[str, object], *, ax=None,
                   title: str | None = None):
    """Step lines of the best loss found at each compute by every allocation, and by all
    points (exhaustive); each policy has its own line style and markers. Returns the Axes."""
    ax, _ = axes(ax, figsize=(6, 4.2))
    for curve in sweep.curves.values():
        ax.plot(curve.compute, curve.loss, color="0.85", lw=0.8, zorder=0)
    compute, loss = _staircase(sweep.curves.values())
    ax.step(compute, loss, where="post", color="black", lw=2.0, label="exhaustive")
    total = sweep.total_compute()
    shown = [name for name in allocations if name != "exhaustive"]
    for i, name in enumerate(shown):
        allocation = allocations[name]
        compute, loss = _staircase(allocation.observed.values())
        if not len(compute):
            continue
        style, marker = STYLES[i % len(STYLES)]
        ends = np.flatnonzero(np.diff(loss, append=-np.inf) < 0)   # where the best loss drops
        ax.step(compute, loss, where="post", lw=1.4, ls=style, color=f"C{i}", marker=marker,
                markevery=list(ends[:: max(1, len(ends) // 12)]), ms=5, mfc="none",
                label=f"{name} ({allocation.spent / total:.1%} of FLOPs)")
    ax.set_xscale("log")
    ax.set_xlabel("compute (FLOPs)")
    ax.set_ylabel("best loss so far")
    ax.set_title(title or "loss-compute frontier")
    ax.legend(fontsize=8)
    return ax


def plot_rungs(sweep, allocation, bracket, *, ax=None, title: str | None = None):
    """Which runs each rung trained, by size: one line per run (parameters N against
    rung), ending at the last rung the run reached; the runs that reached the top rung
    are drawn in colour. Without sizes, runs are placed by name. Returns the Axes."""
    ax, _ = axes(ax, figsize=(5.5, 4.2))
    by_rung: dict[str, dict[int, float]] = {}
    for advance in allocation.advances:
        by_rung.setdefault(advance.run, {})[advance.rung] = advance.stop
    runs = sorted(by_rung)
    sizes = np.array([sweep.params.get(r, np.nan) for r in runs], float)
    sized = bool(len(sizes)) and bool(np.all(np.isfinite(sizes) & (sizes > 0)))
    position = dict(zip(runs, sizes if sized else np.arange(len(runs), dtype=float), strict=True))
    top = bracket.rungs[-1].index
    jitter = {}
    for value in set(position.values()):   # runs of one size side by side, not on top
        same = [r for r in runs if position[r] == value]
        jitter.update({r: 0.08 * (j - (len(same) - 1) / 2) for j, r in enumerate(same)})
    finalists = [r for r in runs if top in by_rung[r]]
    for run in runs:
        steps = np.array(sorted(by_rung[run]), float)
        final = run in finalists
        ax.plot(steps + jitter[run], np.full(len(steps), position[run]), "-o", ms=3.5,
                lw=1.6 if final else 0.8, color="C3" if final else "0.6",
                zorder=3 if final else 2)
    ax.plot([], [], "-o", color="C3", ms=3.5, label=f"reached the top rung ({len(finalists)})")
    ax.plot([], [], "-o", color="0.6", ms=3.5, label="dropped")
    if sized:
        ax.set_yscale("log")
    ax.set_ylabel("parameters N" if sized else "run (by name)")
    ax.set_xticks([r.index for r in bracket.rungs],
                  [f"{r.index}\n{r.resource:.2g}" for r in bracket.rungs])
    ax.set_xlabel(f"rung ({sweep.resource_name} reached)")
    ax.set_title(title or "promotions")
    ax.legend(fontsize=8, loc="best")
    return ax


def plot_allocations(sweep, allocations: Mapping[str, tuple], path: str | Path | None = None, *,
                     ax=None, rung_policy: str | None = None, title: str | None = None):
    """The frontier panel and the rung diagram of ``rung_policy``; returns the Figure.

    ``allocations`` maps a policy name to ``(allocation, bracket)`` (bracket is
    None for ``uniform`` and ``exhaustive``). ``ax``: two Axes to draw into.
    ``title`` (such as a group or budget) is put above both panels.
    """
    (left, right), made = axes(ax, figsize=(11.5, 4.4), panels=2)
    plot_frontiers(sweep, {name: pair[0] for name, pair in allocations.items()}, ax=left)
    halving = [name for name, pair in allocations.items() if pair[1] is not None]
    name = rung_policy if rung_policy in halving else (halving[-1] if halving else None)
    if name is not None:
        allocation, bracket = allocations[name]
        plot_rungs(sweep, allocation, bracket, ax=right, title=f"rungs of policy {name!r}")
    else:
        right.axis("off")
    figure = left.figure
    if title:
        figure.suptitle(title)
    finish(figure, path, made)
    return figure


def plot_replay_summary(averages, path: str | Path | None = None, *, ax=None):
    """A replay's averages: best loss against the share of the exhaustive sweep's compute
    used, one line per policy through its budgets. Returns the Axes."""
    ax, made = axes(ax, figsize=(6.4, 4.0))
    for policy, rows in averages.groupby("policy", sort=False):
        rows = rows.sort_values("compute_fraction")
        ax.plot(rows["compute_fraction"], rows["best_loss"], "o-", ms=4, label=str(policy))
    ax.set(xlabel="compute used (share of the exhaustive sweep)", ylabel="best loss found",
           title="replay: best loss by policy")
    ax.legend(fontsize="small", loc="best")
    finish(ax.figure, path, made)
    return ax
