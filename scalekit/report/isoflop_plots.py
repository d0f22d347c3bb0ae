"""IsoFLOP figures: parabolas per budget with their vertices, and N*(C), D*(C).

The fitted estimators are read through what they carry: Approach 2
(``IsoFLOPProfiles``) by its ``points_``, ``budgets_`` and ``profile``; an
envelope by its ``frontier_``; every approach by ``params_law_`` and
``tokens_law_`` (``predict``, ``interval``, ``exponent``). Takes ``ax=`` and
returns the Figure (see :mod:`scalekit.report._figures`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from scalekit.report._figures import axes, finish, pyplot


def _is_profiles(model) -> bool:
    """Approach 2: per-budget profiles with their parabola vertices."""
    return all(hasattr(model, name) for name in ("points_", "budgets_", "profile"))


def plot_isoflop(fitted: Mapping[str, object], path: str | Path | None = None, *, ax=None,
                 target_compute: float | None = None, title: str | None = None):
    """Draw the IsoFLOP report figure; returns the Figure.

    Parameters
    ----------
    fitted : mapping
        Approach name → fitted estimator (``IsoFLOPProfiles``, ``Envelope``,
        ``ParametricOptimum``); the parabola panel needs Approach 2's profiles.
    path : path, optional
        Also write the figure here (PNG, SVG or PDF by suffix).
    ax : sequence of Axes, optional
        Three Axes (two without Approach 2) to draw into.
    target_compute : float, optional
        Budget the fits are extrapolated to (marked on the N*, D* panels).
    title : str, optional
        Put above the panels (such as a data set or group name).
    """
    profiles = next((m for m in fitted.values() if _is_profiles(m)), None)
    panels = 3 if profiles is not None else 2
    ax, made = axes(ax, figsize=(5.2 * panels, 4.4), panels=panels)
    if profiles is not None:
        _parabolas(ax[0], profiles)
    for panel, name in zip(ax[-2:], ("params", "tokens"), strict=True):
        _optimum_panel(panel, fitted, name, target_compute)
    figure = ax[0].figure
    if title:
        figure.suptitle(title)
    finish(figure, path, made)
    return figure


def _parabolas(ax, profiles) -> None:
    plt = pyplot()
    points, table, var = profiles.points_, profiles.budgets_, profiles.profile
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(table)))
    # budgets_ rows follow the sorted budget labels of points_
    for colour, (_, row), (label, pts) in zip(colours, table.iterrows(),
                                              points.groupby("budget", sort=True), strict=True):
        x = np.log(pts[var].to_numpy())
        ax.scatter(pts[var], pts["loss"], s=12, color=colour)
        sampled = getattr(profiles, "sampled_points_", None)
        if sampled is not None:  # points no parabola describes: hollow
            left = sampled[(sampled["budget"] == label) & ~sampled["used"]]
            ax.scatter(left[var], left["loss"], s=12, facecolors="none", edgecolors=colour)
        if row["flags"] != "downward":
            coef = np.polyfit(x, pts["loss"], 2)
            grid = np.linspace(x.min(), x.max(), 100)
            ax.plot(np.exp(grid), np.polyval(coef, grid), color=colour, lw=1,
                    label=f"{row['budget']:.2g}")
            err = None
            if f"{var}_lo" in row:
                err = _bars(row[f"{var}_opt"], row[f"{var}_lo"], row[f"{var}_hi"])
            ax.errorbar([row[f"{var}_opt"]], [row["loss_opt"]], xerr=err, fmt="D", ms=5,
                        color=colour, mec="black", capsize=3)
    ax.set_xscale("log")
    ax.set_xlabel("parameters N" if var == "params" else "tokens D")
    ax.set_ylabel("loss")
    ax.set_title("IsoFLOP profiles (vertex ± CI; hollow: points left out)")
    ax.legend(title="budget (FLOPs)", fontsize=7, title_fontsize=7, ncol=2)


def _bars(value, lo, hi) -> np.ndarray:
    """Error-bar lengths below and above ``value`` (a percentile interval may exclude it)."""
    value, lo, hi = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (value, lo, hi))
    return np.nan_to_num(np.stack([np.maximum(value - lo, 0), np.maximum(hi - value, 0)]))


def _optimum_panel(ax, fitted, name, target_compute) -> None:
    lows, highs = [], []
    for label, model in fitted.items():
        if _is_profiles(model):
            table = model.budgets_
            c = table["budget"].to_numpy()
            ax.errorbar(c, table[f"{name}_opt"],
                        yerr=None if f"{name}_lo" not in table else
                        _bars(table[f"{name}_opt"], table[f"{name}_lo"], table[f"{name}_hi"]),
                        fmt="o", ms=4, capsize=2, label=f"{label}: vertices")
            lows.append(c.min())
            highs.append(c.max())
        elif hasattr(model, "frontier_"):
            used = model.frontier_[model.frontier_["used"]]
            ax.plot(used["compute"], used[name], ".", ms=3, alpha=0.5, label=f"{label}: envelope")
            lows.append(used["compute"].min())
            highs.append(used["compute"].max())
    lo = min(lows) if lows else (target_compute or 1e20) / 1e3
    hi = max(highs) if highs else lo * 1e3
    end = max(hi, target_compute or hi)
    for label, model in fitted.items():
        law = model.params_law_ if name == "params" else model.tokens_law_
        inside = np.geomspace(lo, hi, 50)
        line, = ax.plot(inside, law.predict(inside), lw=1.2,
                        label=f"{label}: {'a' if name == 'params' else 'b'} = {law.exponent:.3f}")
        if end > hi:
            beyond = np.geomspace(hi, end, 30)
            ax.plot(beyond, law.predict(beyond), lw=1.2, ls="--", color=line.get_color())
            band = law.interval(beyond)
            ax.fill_between(beyond, band[0], band[1], color=line.get_color(), alpha=0.15)
    if target_compute is not None:
        ax.axvline(target_compute, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("compute C (FLOPs)")
    ax.set_ylabel("optimal N*" if name == "params" else "optimal D*")
    ax.set_title(f"{'N' if name == 'params' else 'D'}*(C); dashed: extrapolation")
    ax.legend(fontsize=7)


def plot_metric_allocations(result, path: str | Path | None = None, *, ax=None):
    """N*(C) and D*(C) of every metric of a metric comparison on one log–log plot (one
    panel per group); returns the Figure.

    Solid lines: N*(C) = k_N·C^a, dashed: D*(C) = k_D·C^b (the paired approach-2 fit), each
    with its bootstrap band; markers: the budgets' optima (circles N*, squares D*).

    Parameters
    ----------
    result : MetricComparison
        Read through ``to_dict()`` (its ``bands``, ``optima``, ``metrics``, ``group``).
    path : path, optional
        Also write the figure here (PNG, SVG or PDF by suffix).
    ax : Axes or sequence of Axes, optional
        One Axes per group to draw into.
    """
    body = result.to_dict()
    bands, optima = body["bands"], body["optima"]
    groups = list(dict.fromkeys(row["group"] for row in bands)) or [None]
    ax, made = axes(ax, figsize=(6.4 * len(groups), 4.8), panels=len(groups))
    panels = np.atleast_1d(ax)
    colours = pyplot().cm.tab10(np.arange(len(body["metrics"])) % 10)
    for panel, group in zip(panels, groups, strict=True):
        for colour, metric in zip(colours, body["metrics"], strict=True):
            shown = " (as 1 - value)" if metric in body.get("transformed", []) else ""
            rows = [r for r in bands if r["group"] == group and r["metric"] == metric]
            dots = [r for r in optima if r["group"] == group and r["metric"] == metric]
            for name, style, marker in (("params", "-", "o"), ("tokens", "--", "s")):
                if rows:
                    c, y = np.array([r["compute"] for r in rows]), np.array([r[name] for r in rows])
                    slope = np.log(y[-1] / y[0]) / np.log(c[-1] / c[0])
                    panel.plot(c, y, ls=style, color=colour, lw=1.4,
                               label=f"{metric}{shown}: {'N' if name == 'params' else 'D'}* "
                                     f"∝ C^{slope:.2f}")
                    panel.fill_between(c, [r[f"{name}_lo"] for r in rows],
                                       [r[f"{name}_hi"] for r in rows], color=colour, alpha=0.15)
                if dots:
                    panel.plot([r["compute"] for r in dots], [r[name] for r in dots], marker,
                               color=colour, ms=4, mfc="none" if name == "tokens" else colour)
        panel.set_xscale("log")
        panel.set_yscale("log")
        panel.set_xlabel("compute C (FLOPs)")
        panel.set_ylabel("compute-optimal N* (solid), D* (dashed)")
        where = "" if group is None else f" [{body['group']} = {group}]"
        panel.set_title(f"N*(C) and D*(C) per metric{where}, {100 * body['ci_level']:g}% bands")
        panel.legend(fontsize=7, ncol=2)
    figure = panels[0].figure
    finish(figure, path, made)
    return figure
