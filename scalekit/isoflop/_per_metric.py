"""Compute-optimal allocation per metric, and whether two metrics call for different ones.

Yan et al. (ICML 2026, next-pixel prediction) find that the compute-optimal split depends
on what is measured: for generation the data must grow several times faster than for
classification. :func:`compare_metrics` runs the IsoFLOP analysis
(:func:`scalekit.isoflop._analysis.run_isoflop`) once per metric (and per group of a run
attribute), then compares every pair of metrics with a PAIRED bootstrap: each replicate
resamples the runs within every budget once and refits approach 2 (parabolas through
every point of a budget, Hoffmann et al. 2022) for all metrics on those same runs, so the
difference of the exponents carries the runs' shared noise only once.

A metric where higher is better (an accuracy in (0, 1]) is analysed as its error
``1 - value``; the report says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from itertools import combinations

import numpy as np
import pandas as pd

from scalekit.checks import check_number
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.formatting import format_number, format_with_interval
from scalekit.isoflop._analysis import NAMES, run_isoflop
from scalekit.isoflop._budgets import assign_budgets
from scalekit.isoflop._parabolas import Groups, fit_parabolas, group_scaling, vertices
from scalekit.isoflop._points import final_points, isoflop_points
from scalekit.results import ResultProtocol, frame_from_records

#: What the paired comparison reports per pair, with its interval.
PAIR_QUANTITIES = ("diff_a", "diff_b", "ratio_b")


@dataclass(repr=False)
class MetricComparison(ResultProtocol):
    """Per-metric allocations and their paired comparison (see :func:`compare_metrics`).

    ``allocations``: one row per group, metric and approach (``a``, ``b`` with intervals,
    ``k_N``, ``k_D``; at ``target_compute`` ``params``, ``tokens`` and ``tokens_per_param``).
    ``pairs``: one row per group and pair of metrics: ``b_1``, ``b_2`` (the paired fit's
    point estimates), ``diff_b = b_2 - b_1``, ``diff_a = a_2 - a_1`` and ``ratio_b = b_2 / b_1``
    (how many times faster D* grows per decade of compute for the second metric), each with
    ``_lo``/``_hi``; ``distinguishable`` when the interval of ``diff_b`` excludes 0.
    ``optima``: the paired fit's budget optima, one row per group, metric and budget
    (``compute``, ``params``, ``tokens``). ``bands``: N*(C) and D*(C) of the paired fit on a
    grid of compute from the smallest budget to the largest (or ``target_compute``), with
    the ``ci_level`` band of the bootstrap replicates (``params_lo``, …) — what
    :func:`scalekit.report.isoflop_plots.plot_metric_allocations` draws.
    """

    metrics: list[str]
    transformed: list[str]
    group: str | None
    target_compute: float | None
    ci_level: float
    n_boot: int
    allocations: list[dict]
    pairs: list[dict]
    optima: list[dict] = field(default_factory=list)
    bands: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"metrics": list(self.metrics), "transformed": list(self.transformed),
                "group": self.group, "target_compute": self.target_compute,
                "ci_level": self.ci_level, "n_boot": self.n_boot,
                "allocations": self.allocations, "pairs": self.pairs, "optima": self.optima,
                "bands": self.bands, "notes": self.notes,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: dict) -> MetricComparison:
        known = {f.name for f in fields(cls)} - {"diagnostics"}   # a report's header aside
        return cls(**{k: v for k, v in data.items() if k in known},
                   diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self) -> pd.DataFrame:
        """The pairs: one row per group and pair of metrics (see the class docstring)."""
        return frame_from_records(self.pairs)

    def allocations_frame(self) -> pd.DataFrame:
        """The per-metric allocations: one row per group, metric and approach."""
        return frame_from_records(self.allocations)

    def optima_frame(self) -> pd.DataFrame:
        """The budgets' optima per group and metric (approach 2, every point of a budget)."""
        return frame_from_records(self.optima)

    def bands_frame(self) -> pd.DataFrame:
        """N*(C) and D*(C) per group and metric on a grid of compute, with their bands."""
        return frame_from_records(self.bands)

    def _summary_title(self) -> str:
        return "Compute-optimal allocation per metric: " + ", ".join(self.metrics)

    def _summary_sections(self):
        pct = f"{100 * self.ci_level:g}%"
        answer = [pair_line(p, pct) for p in self.pairs]
        rows = [(f"{r['metric']}" + (f" [{r['group']}]" if r.get("group") is not None else "")
                 + f", approach {r['approach']}",
                 f"a {format_with_interval(r['a'], (r['a_lo'], r['a_hi']))}, "
                 f"b {format_with_interval(r['b'], (r['b_lo'], r['b_hi']))}"
                 + (f", D*/N* {format_number(r['tokens_per_param'])}"
                    if r.get("tokens_per_param") is not None else ""))
                for r in self.allocations]
        notes = [f"note: {n}" for n in self.notes] + [d.line() for d in self.diagnostics]
        return [("Comparison (paired bootstrap over runs)", answer),
                ("Allocation per metric", rows), ("Notes and warnings", notes)]

    def _repr_fields(self) -> dict:
        return {"metrics": len(self.metrics), "pairs": len(self.pairs),
                "distinguishable": sum(bool(p["distinguishable"]) for p in self.pairs)}


def pair_line(pair: dict, pct: str) -> str:
    """One sentence on a pair: how much faster D* grows for the second metric."""
    where = f" [{pair['group']}]" if pair.get("group") is not None else ""
    ratio = format_with_interval(pair["ratio_b"], (pair["ratio_b_lo"], pair["ratio_b_hi"]))
    diff = format_with_interval(pair["diff_b"], (pair["diff_b_lo"], pair["diff_b_hi"]))
    verdict = "" if pair["distinguishable"] else "; not distinguishable at " + pct
    return (f"{pair['metric_2']} vs {pair['metric_1']}{where}: D* exponent b differs by "
            f"{diff}; D* grows {ratio}× as fast{verdict}")


def compare_metrics(frame: pd.DataFrame, metrics: Sequence[str], *, settings: dict,
                    approaches: Sequence[str] = ("2",), higher_is_better: Sequence[str] = (),
                    group: str | None = None, seed: int = 0,
                    source: str | None = None) -> MetricComparison:
    """Fit the IsoFLOP ``approaches`` per metric (per ``group``) and compare every pair.

    Parameters
    ----------
    frame : DataFrame
        Points or curves with one column per metric and two of compute, params, tokens.
    metrics : sequence of str
        At least two metric columns.
    settings : dict
        The settings of :func:`~scalekit.isoflop._analysis.run_isoflop` (``bootstrap`` and
        ``ci_level`` also set the paired bootstrap).
    approaches : sequence of {"1", "2", "3"}
        The approaches fitted per metric; the paired comparison is approach 2's.
    higher_is_better : sequence of str
        Metrics analysed as their error ``1 - value`` (values must lie in [0, 1)).
    group : str, optional
        A run attribute: each of its values is analysed and compared on its own.
    """
    metrics = list(dict.fromkeys(metrics))
    if len(metrics) < 2:
        raise InputError(f"The value of `metrics` is {metrics!r}, but must name at least two "
                         "metrics to compare", source=source)
    for name in [*metrics, *([group] if group else [])]:
        if name not in frame:
            raise InputError(f"no {name!r} column", source=source, column=name)
    for name in higher_is_better:
        if name not in metrics:
            raise InputError(f"The value of `higher_is_better` names {name!r}, but must name "
                             "one of `metrics`", source=source)
    check_number("bootstrap", settings["bootstrap"], low=0, integer=True)
    frame = final_points(frame).copy()
    for name in higher_is_better:
        values = pd.to_numeric(frame[name], errors="coerce")
        if not ((values >= 0) & (values < 1)).all():
            raise InputError(f"{name} is higher-is-better and is analysed as 1 - {name}, so it "
                             "must lie in [0, 1)", source=source, column=name)
        frame[name] = 1 - values
    groups = [(None, frame)] if group is None else list(frame.groupby(group, sort=True))
    allocations, pairs, optima, bands, diagnostics, notes = [], [], [], [], [], []
    level = settings["ci_level"]
    for label, part in groups:
        label = None if label is None else (label.item() if hasattr(label, "item") else label)
        where = "" if label is None else f" ({group} = {label})"
        for metric in metrics:
            data = part.drop(columns=[m for m in metrics if m != metric and m != "loss"]
                             + (["loss"] if metric != "loss" and "loss" in part else []))
            data = data.rename(columns={metric: "loss"})
            report = run_isoflop(data, tuple(approaches), settings, seed=seed, source=source)
            for row in report.body["comparison"]:
                row = {"group": label, "metric": metric,
                       **{k: v for k, v in row.items()}, "approach": _key(row["approach"])}
                if "tokens" in row:
                    row["tokens_per_param"] = row["tokens"] / row["params"]
                allocations.append(row)
            diagnostics += [Diagnostic(d.code, d.severity, f"{metric}{where}: {d.message}",
                                       param=d.param, value=d.value)
                            for d in report.diagnostics]
            notes += [n for n in report.body["notes"] if n not in notes]
        paired = paired_exponents(part, metrics, settings=settings, seed=seed, source=source)
        optima += _optima_rows(paired, metrics, label)
        bands += _band_rows(paired, metrics, label, settings.get("target_compute"), level)
        for i, j in combinations(range(len(metrics)), 2):
            pair = _pair_row(paired, i, j, level)
            pair.update(group=label, metric_1=metrics[i], metric_2=metrics[j])
            pairs.append(pair)
            if not pair["distinguishable"]:
                diagnostics.append(Diagnostic(
                    "metrics_indistinguishable", "warning",
                    f"{metrics[j]} vs {metrics[i]}{where}: the {100 * level:g}% interval of the "
                    "difference of b, "
                    f"{format_with_interval(pair['diff_b'], (pair['diff_b_lo'], pair['diff_b_hi']))}, "
                    "covers 0, so the data cannot tell whether the two metrics call for "
                    "different allocations; more runs per budget or more budgets would narrow "
                    "that interval",
                    value=float(pair["diff_b"])))
    if higher_is_better:
        notes.append("higher-is-better metrics analysed as their error 1 - value: "
                     + ", ".join(higher_is_better))
    return MetricComparison(metrics, list(higher_is_better), group,
                            settings.get("target_compute"), level, int(settings["bootstrap"]),
                            allocations, pairs, optima, bands, notes, diagnostics)


def _key(name: str) -> str:
    return next(k for k, v in NAMES.items() if v == name)


@dataclass(frozen=True)
class PairedExponents:
    """Approach-2 fits of several metrics on the same runs: exponents ``a``, ``b`` and
    log-coefficients ``log_kn``, ``log_kd`` (N* = k_N·C^a, D* = k_D·C^b) of shape (metrics,),
    their paired bootstrap replicates ``*_boot`` (B, metrics), and the budgets' optima:
    ``log_c`` (K,), ``log_n_star`` and ``log_d_star`` (metrics, K; nan where a vertex lies
    outside the sampled sizes)."""

    a: np.ndarray
    b: np.ndarray
    a_boot: np.ndarray
    b_boot: np.ndarray
    log_kn: np.ndarray
    log_kd: np.ndarray
    log_kn_boot: np.ndarray
    log_kd_boot: np.ndarray
    log_c: np.ndarray
    log_n_star: np.ndarray
    log_d_star: np.ndarray


def paired_exponents(frame: pd.DataFrame, metrics: Sequence[str], *, settings: dict,
                     seed: int = 0, source: str | None = None) -> PairedExponents:
    """Exponents a (of N*) and b (of D*) of each metric by approach 2 with every point of a
    budget, and ``settings["bootstrap"]`` replicates that resample the runs within each
    budget once for all metrics (Hoffmann et al. 2022 §3.2; the pairing is ours).

    Budgets are found as :class:`~scalekit.isoflop._approach2.IsoFLOPProfiles` finds them
    (``figures``, ``budgets``, ``budget_tolerance``); D* at a budget's vertex is read from
    the within-budget line of log D on log N (exact under C = k·N·D).
    """
    k = settings["flops_per_param_token"]
    points = [isoflop_points(frame.drop(columns=[c for c in metrics if c != m] + (
        ["loss"] if m != "loss" and "loss" in frame else []), errors="ignore").rename(
        columns={m: "loss"}),
        convention=settings["convention"], flops_per_param_token=k, source=source).frame
        for m in metrics]
    base = points[0]
    assignment = assign_budgets(base["compute"].to_numpy(), figures=settings["figures"],
                                nominal=settings["budgets"],
                                tolerance=settings["budget_tolerance"])
    order = np.argsort(assignment.budget, kind="stable")
    keep = order[np.isfinite(assignment.budget[order])]
    budget = assignment.budget[keep]
    groups = Groups.from_sorted_codes(budget)
    x = np.log(base["params"].to_numpy()[keep])
    log_d = np.log(base["tokens"].to_numpy()[keep])
    log_c = np.log(base["compute"].to_numpy()[keep])
    y = np.stack([p["loss"].to_numpy()[keep] for p in points])           # (M, n)
    if groups.sizes.size < 3:
        raise InputError(f"{groups.sizes.size} budgets found, but a power law through the "
                         "optima needs three", source=source)
    c, n_star, d_star = _optima(x, y, log_d, log_c, groups)
    (a, log_kn), (b, log_kd) = _slopes(c, n_star), _slopes(c, d_star)
    rng = np.random.default_rng(seed)
    n_boot = int(settings["bootstrap"])
    within = (rng.random((n_boot, x.size)) * groups.sizes[groups.member]).astype(int)
    index = groups.starts[groups.member] + within                      # (B, n): runs resampled
    boot = np.empty((4, n_boot, len(metrics)))                         # a, log k_N, b, log k_D
    for r in range(n_boot):
        i = np.sort(index[r])
        c_r, n_r, d_r = _optima(x[i], y[:, i], log_d[i], log_c[i], groups)
        (boot[0, r], boot[1, r]), (boot[2, r], boot[3, r]) = _slopes(c_r, n_r), _slopes(c_r, d_r)
    return PairedExponents(a, b, boot[0], boot[2], log_kn, log_kd, boot[1], boot[3],
                           c, n_star, d_star)


def _optima(x, y, log_d, log_c, groups: Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per budget: mean log C (K,), and per metric log N* and log D* at the parabolas'
    vertices (M, K; nan for a vertex more than three half-spans from a budget's sizes)."""
    x_star, _ = vertices(fit_parabolas(x, y, groups), x, groups)       # (M, K)
    centre, half = group_scaling(x, groups)
    x_star = np.where(np.abs(x_star - centre) > 3 * half, np.nan, x_star)
    n = groups.sizes

    def mean(v):
        return np.add.reduceat(v, groups.starts, axis=-1) / n

    dx = x - mean(x)[groups.member]
    slope = np.add.reduceat(dx * (log_d - mean(log_d)[groups.member]), groups.starts) / \
        np.add.reduceat(dx * dx, groups.starts)
    d_star = mean(log_d) + slope * (x_star - mean(x))
    return mean(log_c), x_star, d_star


def _slopes(c: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS slope and intercept of each row of ``v`` on ``c``, over the finite entries
    (nan with < 3)."""
    ok = np.isfinite(v)
    w = ok.astype(float)
    count = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mc = (w * c).sum(-1) / count
        mv = np.where(ok, v, 0).sum(-1) / count
        dc = np.where(ok, c - mc[:, None], 0)
        slope = (dc * np.where(ok, v - mv[:, None], 0)).sum(-1) / (dc * dc).sum(-1)
    slope = np.where(count >= 3, slope, np.nan)
    return slope, mv - slope * mc


def _optima_rows(paired: PairedExponents, metrics: Sequence[str], group) -> list[dict]:
    """The finite budget optima of each metric as records."""
    return [{"group": group, "metric": metric, "compute": float(np.exp(c)),
             "params": float(np.exp(n)), "tokens": float(np.exp(d))}
            for m, metric in enumerate(metrics)
            for c, n, d in zip(paired.log_c, paired.log_n_star[m], paired.log_d_star[m], strict=True)
            if np.isfinite(n) and np.isfinite(d)]


def _band_rows(paired: PairedExponents, metrics: Sequence[str], group, target, level: float,
               points: int = 25) -> list[dict]:
    """N*(C), D*(C) of each metric on a log grid of compute with the bootstrap band."""
    top = max(paired.log_c.max(), np.log(target)) if target else paired.log_c.max()
    grid = np.linspace(paired.log_c.min(), top, points)
    tails = [50 * (1 - level), 50 * (1 + level)]
    rows = []
    for m, metric in enumerate(metrics):
        if not (np.isfinite(paired.a[m]) and np.isfinite(paired.b[m])):
            continue
        row_sets = {}
        for name, slope, icpt, slope_b, icpt_b in (
                ("params", paired.a[m], paired.log_kn[m], paired.a_boot[:, m], paired.log_kn_boot[:, m]),
                ("tokens", paired.b[m], paired.log_kd[m], paired.b_boot[:, m], paired.log_kd_boot[:, m])):
            ok = np.isfinite(slope_b) & np.isfinite(icpt_b)
            boot = icpt_b[ok, None] + slope_b[ok, None] * grid
            lo, hi = np.percentile(boot, tails, axis=0) if ok.any() else (grid * np.nan,) * 2
            row_sets[name] = (icpt + slope * grid, lo, hi)
        for g in range(points):
            row = {"group": group, "metric": metric, "compute": float(np.exp(grid[g]))}
            for name, (mid, lo, hi) in row_sets.items():
                row.update({name: float(np.exp(mid[g])), f"{name}_lo": float(np.exp(lo[g])),
                            f"{name}_hi": float(np.exp(hi[g]))})
            rows.append(row)
    return rows


def _pair_row(paired: PairedExponents, i: int, j: int, level: float) -> dict:
    tails = [50 * (1 - level), 50 * (1 + level)]
    row = {"a_1": float(paired.a[i]), "a_2": float(paired.a[j]),
           "b_1": float(paired.b[i]), "b_2": float(paired.b[j])}
    for name, value, boot in (
            ("diff_a", paired.a[j] - paired.a[i], paired.a_boot[:, j] - paired.a_boot[:, i]),
            ("diff_b", paired.b[j] - paired.b[i], paired.b_boot[:, j] - paired.b_boot[:, i]),
            ("ratio_b", paired.b[j] / paired.b[i], paired.b_boot[:, j] / paired.b_boot[:, i])):
        boot = boot[np.isfinite(boot)]
        lo, hi = np.percentile(boot, tails) if boot.size else (np.nan, np.nan)
        row.update({name: float(value), f"{name}_lo": float(lo), f"{name}_hi": float(hi)})
    row["boot_used"] = int(np.isfinite(paired.b_boot[:, [i, j]]).all(axis=1).sum())
    row["distinguishable"] = bool(not (row["diff_b_lo"] <= 0 <= row["diff_b_hi"]))
    return row
