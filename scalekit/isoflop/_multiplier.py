"""Is the variant better at scale? The compute multiplier of one IsoFLOP sweep over another.

Each arm's compute-optimal frontier is fitted as :mod:`scalekit.isoflop._approach2` fits
IsoFLOP profiles (Hoffmann et al. 2022 §3.2): a parabola in log N through every point of a
budget gives the budget's least loss L*_i; a law through the (C_i, L*_i) is the frontier:

* ``"power"``: ``L*(C) = a·C^-b`` (a line in log-log, least squares);
* ``"saturating"``: ``L*(C) = E + A·C^-alpha`` (the registered ``frontier`` law, fitted by
  the shared engine, :func:`scalekit.fit.fit_law`).

At a target compute C the **compute multiplier** is ``k = C_b / C`` where ``C_b`` is the
compute the baseline's frontier needs to reach the variant's loss ``L*_v(C)``: k > 1 when
the variant is better (the baseline would need k times the compute). The interval of k,
of the loss difference ``L*_v(C) - L*_b(C)`` and of the exponents come from a PAIRED
bootstrap over runs: each replicate resamples the runs within every budget, with the same
draws for both arms at a budget they share with as many runs (sorted by size, the i-th run
of each arm is the same model), and refits both frontiers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.formatting import format_number, format_with_interval
from scalekit.isoflop._budgets import assign_budgets
from scalekit.isoflop._parabolas import Groups, fit_parabolas
from scalekit.isoflop._points import convention_text, final_points, isoflop_points
from scalekit.results import ResultProtocol, frame_from_records

#: The frontier laws a comparison can fit: two through the budgets' least losses, and
#: Chinchilla's L(N, D) fitted to every run (its frontier is exactly E + A'·C^-gamma).
FRONTIER_LAWS = ("auto", "power", "saturating", "chinchilla")
#: What a comparison concludes at a target compute.
VERDICTS = ("better", "worse", "not_decided")
#: When the counted compute and 6·N·D of the runs differ by more than this (relative), say so.
COUNT_MISMATCH = 0.10
#: Below this p-value of the frontier's lack-of-fit test its bootstrap spread is widened.
MISFIT_P = 0.05
#: The grid of log compute on which frontiers are drawn and crossings looked for.
_CROSS_GRID = np.linspace(np.log(1e15), np.log(1e28), 521)


@dataclass
class _Arm:
    """One arm's IsoFLOP points, sorted by budget and, within it, by size."""

    name: str
    budget: np.ndarray        # (n,) nominal budget of each point
    log_c: np.ndarray         # (n,) log compute
    log_n: np.ndarray         # (n,) log params
    log_d: np.ndarray         # (n,) log tokens
    loss: np.ndarray          # (n,)
    groups: Groups
    runs_used: int
    dropped: list[dict]
    convention: str
    input_sha256: str
    count_ratio: dict | None    # how the runs' counted FLOPs compare with k·N·D, if both known

    @property
    def budgets(self) -> np.ndarray:
        return self.budget[self.groups.starts]

    @property
    def budget_log_c(self) -> np.ndarray:
        """Mean log compute of each budget's points (K,)."""
        return np.add.reduceat(self.log_c, self.groups.starts) / self.groups.sizes


@dataclass(repr=False)
class Comparison(ResultProtocol):
    """Two arms' compute-optimal frontiers and the compute multiplier between them.

    ``targets``: one record per target compute: ``compute``, ``loss_baseline``,
    ``loss_variant`` (with ``_interval``), ``multiplier`` and ``multiplier_interval``,
    ``loss_difference`` (variant minus baseline) and ``loss_difference_interval``,
    ``extrapolation`` (target over the largest budget of both arms) and ``verdict``
    (``better``, ``worse`` or ``not_decided``: whether the interval of k excludes 1).
    ``arms``: per arm its inputs (``input_sha256``, ``runs_used``, ``dropped``), budgets,
    FLOP convention and frontier (``exponent`` with its interval, ``parameters``).
    ``exponents``: the difference of the frontiers' exponents (variant minus baseline) with
    its interval, whether it excludes 0 and where the frontiers cross (``crossing``,
    ``crossing_interval``, ``crossing_share``: the share of replicates that cross in
    1e15–1e28 FLOPs). ``curves``: both frontiers and k on a grid of compute with their
    bands (the figures); ``optima``: each arm's budget minima (C_i, L*_i). ``decide``: for a
    target not decided, the runs that would most narrow the interval of k per FLOP.
    """

    baseline: str
    variant: str
    law: str
    ci_level: float
    n_boot: int
    seed: int
    targets: list[dict]
    arms: list[dict]
    exponents: dict
    curves: list[dict] = field(default_factory=list)
    optima: list[dict] = field(default_factory=list)
    decide: list[dict] = field(default_factory=list)
    flops: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self)
                   if f.name != "diagnostics"},
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: dict) -> Comparison:
        known = {f.name for f in fields(cls)} - {"diagnostics"}
        return cls(**{k: v for k, v in data.items() if k in known},
                   diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self) -> pd.DataFrame:
        """The targets: one row per target compute (intervals as ``_lo``/``_hi`` columns)."""
        rows = []
        for t in self.targets:
            row = {k: v for k, v in t.items() if not k.endswith("_interval")}
            for k, v in t.items():
                if k.endswith("_interval"):
                    row[f"{k[:-9]}_lo"], row[f"{k[:-9]}_hi"] = v
            rows.append(row)
        return frame_from_records(rows)

    def curves_frame(self) -> pd.DataFrame:
        """Both frontiers and k on a grid of compute, with their bands."""
        return frame_from_records(self.curves)

    def _summary_title(self) -> str:
        return f"Compute multiplier of {self.variant} over {self.baseline}"

    def _summary_sections(self):
        pct = f"{100 * self.ci_level:g}%"
        answer = [target_line(t, self.variant, self.baseline, pct) for t in self.targets]
        e = self.exponents
        arms = [(a["name"], f"L*(C) exponent {format_with_interval(a['exponent'], a['exponent_interval'])}; "
                 f"{a['runs_used']} runs in {len(a['budgets'])} budgets, "
                 f"{sum(d['runs'] for d in a['dropped'])} dropped; FLOPs: {a['convention']}")
                for a in self.arms]
        arms.append(("exponent difference", exponent_line(e, pct)))
        decide = [decide_line(d) for d in self.decide]
        notes = [f"note: {n}" for n in self.notes] + [d.line() for d in self.diagnostics]
        return [(f"Compute multiplier k ({pct}, paired bootstrap over runs)", answer),
                ("Frontiers", arms), ("Runs that would decide", decide),
                ("Notes and warnings", notes)]

    def _repr_fields(self) -> dict:
        return {"law": self.law, "targets": len(self.targets),
                "better": sum(t["verdict"] == "better" for t in self.targets)}


def target_line(t: dict, variant: str, baseline: str, pct: str) -> str:
    """One sentence on a target compute: k with its interval and the verdict."""
    k = format_with_interval(t["multiplier"], t["multiplier_interval"])
    if t["multiplier"] is None:
        k = "unbounded (the baseline's frontier never reaches the variant's loss)"
    diff = format_with_interval(t["loss_difference"], t["loss_difference_interval"])
    said = {"better": f"{variant} is better at {pct} confidence",
            "worse": f"{variant} is worse at {pct} confidence",
            "not_decided": "not decided"}[t["verdict"]]
    far = (f" (extrapolated {format_number(t['extrapolation'], 2)}× past the largest budget)"
           if t["extrapolation"] > 1.001 else "")
    return (f"at {format_number(t['compute'], 3)} FLOPs{far}: k = {k}, loss difference {diff}: "
            f"{said}")


def exponent_line(e: dict, pct: str) -> str:
    """One sentence on whether the frontiers' exponents differ and where they cross."""
    diff = format_with_interval(e["difference"], e["difference_interval"])
    if not e["differ"]:
        return f"{diff}: the {pct} interval covers 0, so k is not shown to change with scale"
    where = ("they do not cross in 1e15–1e28 FLOPs" if e["crossing"] is None else
             f"the frontiers cross at {format_with_interval(e['crossing'], e['crossing_interval'])}"
             " FLOPs")
    return f"{diff}: k changes with scale; {where}"


def decide_line(d: dict) -> str:
    """One sentence on a run set that would narrow the interval of k."""
    arm = "runs in each arm" if d["arm"] == "both" else f"{d['arm']} runs"
    runs = d["runs"] // 2 if d["arm"] == "both" else d["runs"]
    return (f"at {format_number(d['target'], 3)} FLOPs: {runs} more {arm} at "
            f"{format_number(d['budget'], 3)} FLOPs ({format_number(d['cost'], 3)} FLOPs in all) "
            f"would narrow k's interval from ×/÷{format_number(d['width_now'], 3)} to "
            f"×/÷{format_number(d['width_after'], 3)}"
            + ("; enough to decide if k stays at its estimate" if d["decides"] else ""))


def compare(baseline, variant=None, *, by: str | None = None, arms=None,
            target_compute=None, law: str = "auto", convention: str = "6ND",
            conventions=None, convert: str | None = None,
            flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN, bootstrap: int = 200,
            ci_level: float = 0.95, seed: int = 0, figures: int | None = None,
            budgets=None, budget_tolerance: float = 0.1, source: str | None = None
            ) -> Comparison:
    """Compare two IsoFLOP sweeps: at each target compute, the compute multiplier k of the
    variant over the baseline, the loss difference and a verdict, with paired-bootstrap
    intervals (see the module docstring).

    Parameters
    ----------
    baseline, variant : DataFrame or Curves
        Each arm's points (final points of runs), with ``loss`` and two of ``compute``,
        ``params``, ``tokens``. With ``by``, ``baseline`` holds both arms and ``variant`` is
        None.
    by : str, optional
        A column of ``baseline`` naming each point's arm.
    arms : (str, str), optional
        With ``by``: the baseline's and the variant's values of it (needed unless it holds
        exactly two values, then taken in sorted order).
    target_compute : float or sequence of float, optional
        Where to compare (FLOPs); the largest budget both arms share by default.
    law : {"auto", "power", "saturating", "chinchilla"}
        The frontier law through the budgets' minima, or Chinchilla's L(N, D) through every
        run (whose frontier is E + A'·C^-gamma). ``"auto"``: the power law, unless its
        lack-of-fit test rejects it on an arm and the saturating law's rejects it on fewer
        (a note says which was used).
    convention : {"6ND", "counted"}
        The FLOP convention of both arms (:func:`scalekit.isoflop.run_isoflop`'s).
    conventions : (str, str), optional
        Each arm's own convention; arms whose conventions differ are refused unless
        ``convert`` says how to put them on one footing.
    convert : {"6ND"}, optional
        Recompute every arm's compute as k·N·D (needs params and tokens).
    flops_per_param_token : float
        k in C = k·N·D.
    bootstrap : int
        Paired bootstrap replicates (at least 50 for a verdict's interval to mean much).
    ci_level : float
        Level of every interval.
    figures, budgets, budget_tolerance
        How budgets are found (:func:`scalekit.isoflop.assign_budgets`).

    Returns
    -------
    Comparison
    """
    check_choice("law", law, FRONTIER_LAWS)
    if law == "auto":
        return _auto(baseline, variant, dict(
            by=by, arms=arms, target_compute=target_compute, convention=convention,
            conventions=conventions, convert=convert, flops_per_param_token=flops_per_param_token,
            bootstrap=bootstrap, ci_level=ci_level, seed=seed, figures=figures, budgets=budgets,
            budget_tolerance=budget_tolerance, source=source))
    check_number("bootstrap", bootstrap, low=2, integer=True)
    check_number("ci_level", ci_level, low=0, high=1, low_open=True, high_open=True)
    check_number("seed", seed, low=0, integer=True)
    names, frames = _split(baseline, variant, by, arms, source)
    conv = _conventions(convention, conventions, convert)
    settings = {"figures": figures, "budgets": budgets, "budget_tolerance": budget_tolerance,
                "flops_per_param_token": flops_per_param_token}
    parabolas = law != "chinchilla"
    prepared = [_prepare(name, frame, c, settings, source, parabolas=parabolas)
                for name, frame, c in zip(names, frames, conv, strict=True)]
    targets = _targets(target_compute, prepared)
    diagnostics, notes = _flop_checks(prepared)
    if convert is not None:
        notes.append(f"both arms' compute recomputed as {flops_per_param_token:g}·N·D "
                     "(`convert`)")
    rng = np.random.default_rng(seed)
    if parabolas:
        index = _paired_indices(prepared, int(bootstrap), rng)
        fits = [_Frontier.fit(arm, law, idx) for arm, idx in zip(prepared, index, strict=True)]
    else:
        counts = _paired_run_counts(prepared, int(bootstrap), rng)
        fits = [_Frontier.fit_runs(arm, c) for arm, c in zip(prepared, counts, strict=True)]
    level = float(ci_level)
    target_rows = [_target_row(fits, c, level, prepared) for c in targets]
    exponents = _exponents(fits, level)
    for row in target_rows:
        if row["extrapolation"] > 1.001:
            diagnostics.append(Diagnostic(
                "extrapolation", "warning" if row["extrapolation"] > 10 else "info",
                f"the target {format_number(row['compute'], 3)} FLOPs is "
                f"{format_number(row['extrapolation'], 2)}× the largest budget both arms ran: "
                "its k assumes both frontiers keep their law out there", budget=row["compute"],
                value=row["extrapolation"]))
        if row["verdict"] == "not_decided":
            diagnostics.append(Diagnostic(
                "not_decided", "warning",
                f"at {format_number(row['compute'], 3)} FLOPs the {100 * level:g}% interval of k, "
                f"{format_with_interval(row['multiplier'], row['multiplier_interval'])}, holds 1: "
                "the data cannot tell whether the variant is better; see the runs that would "
                "decide", budget=row["compute"], value=row["multiplier"]))
    for fit in fits:
        if law == "saturating" and fit.theta[0] < 1e-6 * np.exp(fit.log_l.min()):
            diagnostics.append(Diagnostic(
                "on_bound", "info", f"{fit.arm.name}: the saturating frontier's floor E is "
                f"{format_number(fit.theta[0], 3)}, at its bound 0: the budgets show no floor, "
                "and the fit is the power law's", param="E", value=float(fit.theta[0])))
        m = fit.misfit
        if m.get("p") is not None and m["p"] < MISFIT_P:
            diagnostics.append(Diagnostic(
                "frontier_misfit", "warning",
                f"{fit.arm.name}: the {law} frontier misses the budgets' least losses by more "
                f"than their noise (chi2 {format_number(m['chi2'], 3)} on {m['dof']} dof, p = "
                f"{format_number(m['p'], 2)}): its intervals are widened "
                f"{format_number(m['inflation'], 3)}×; an extrapolated k leans on a law the data "
                "do not follow — try the other `law`, or compare nearer the data",
                value=m["inflation"]))
        if fit.failed:
            diagnostics.append(Diagnostic(
                "not_converged", "warning", f"{fit.arm.name}: the frontier could not be fitted "
                f"on {fit.failed} of {fit.n_boot} bootstrap replicates (left out of the "
                "intervals)", value=fit.failed))
    decide = [d for row in target_rows if row["verdict"] == "not_decided" and parabolas
              for d in _decide(fits, row["compute"], level)]
    if not parabolas and any(row["verdict"] == "not_decided" for row in target_rows):
        notes.append("the runs that would decide are ranked for the IsoFLOP frontier laws only "
                     "(`law` power or saturating)")
    return Comparison(
        names[0], names[1], law, level, int(bootstrap), int(seed), target_rows,
        [fit.arm_record(level) for fit in fits], exponents,
        _curve_rows(fits, targets, level), _optima_rows(fits), decide,
        {"conventions": [a.convention for a in prepared], "convert": convert,
         "count_ratio": [a.count_ratio for a in prepared]}, notes, diagnostics)


def _auto(baseline, variant, settings) -> Comparison:
    """The power frontier, or the saturating one where the power law fails its lack-of-fit
    test on more arms than the saturating law does."""
    power = compare(baseline, variant, law="power", **settings)
    rejected = sum(d.code == "frontier_misfit" for d in power.diagnostics)
    if not rejected:
        power.notes.append("`law` auto: the power frontier, which fits both arms' budgets")
        return power
    saturating = compare(baseline, variant, law="saturating", **settings)
    if sum(d.code == "frontier_misfit" for d in saturating.diagnostics) < rejected:
        saturating.notes.append(f"`law` auto: the saturating frontier, since the power law "
                                f"misses the budgets of {rejected} arm(s) and it misses fewer")
        return saturating
    power.notes.append("`law` auto: the power frontier; the saturating law fits no better")
    return power


def _split(baseline, variant, by, arms, source):
    """The two arms' names and frames."""
    if by is None:
        if variant is None:
            raise InputError("The value of `variant` is None, but must be the variant's points "
                             "(or give `by` to split one frame)", source=source)
        return ("baseline", "variant"), [_frame(baseline), _frame(variant)]
    frame = _frame(baseline)
    if variant is not None:
        raise InputError("give either `variant` or `by`, not both", source=source)
    if by not in frame:
        raise InputError(f"no {by!r} column", source=source, column=by)
    values = sorted(frame[by].dropna().astype(str).unique())
    if arms is None:
        if len(values) != 2:
            raise InputError(f"The value of `arms` is None, but must name the baseline and the "
                             f"variant: column {by!r} holds {len(values)} values "
                             f"({', '.join(values[:6])})", source=source, column=by)
        arms = values
    arms = [str(a) for a in arms]
    if len(arms) != 2 or arms[0] == arms[1]:
        raise InputError(f"The value of `arms` is {arms!r}, but must be two different values "
                         f"of {by!r}", source=source)
    for a in arms:
        if a not in values:
            raise InputError(f"The value of `arms` names {a!r}, but column {by!r} holds "
                             f"{', '.join(values[:6])}", source=source, column=by)
    labels = frame[by].astype(str)
    return tuple(arms), [frame[labels == a].drop(columns=[by]) for a in arms]


def _frame(data) -> pd.DataFrame:
    return data.frame if hasattr(data, "frame") else pd.DataFrame(data)


def _conventions(convention, conventions, convert) -> list[str]:
    if convert is not None:
        check_choice("convert", convert, ("6ND",))
        return ["6ND", "6ND"]
    if conventions is None:
        return [convention, convention]
    conventions = list(conventions)
    if len(conventions) != 2:
        raise InputError(f"The value of `conventions` is {conventions!r}, but must be two "
                         "conventions (baseline, variant)")
    if conventions[0] != conventions[1]:
        raise InputError(f"the arms count FLOPs differently ({conventions[0]} and "
                         f"{conventions[1]}): their compute is not comparable; give `convert` "
                         "to recompute both as k·N·D")
    return conventions


def _prepare(name, frame, convention, settings, source, *, parabolas: bool = True) -> _Arm:
    """One arm's points by budget; with ``parabolas``, budgets with fewer than three sizes
    are dropped (the Chinchilla law keeps every run)."""
    frame = final_points(frame)
    given = frame.get("compute")
    points = isoflop_points(frame, convention=convention,
                            flops_per_param_token=settings["flops_per_param_token"],
                            source=source).frame
    ratio = _count_ratios(frame, given, points, settings["flops_per_param_token"])
    assignment = assign_budgets(points["compute"].to_numpy(), figures=settings["figures"],
                                nominal=settings["budgets"],
                                tolerance=settings["budget_tolerance"])
    points = points.assign(budget=assignment.budget)
    dropped = []
    if assignment.n_left_out:
        dropped.append({"budget": None, "runs": int(assignment.n_left_out),
                        "why": "near no budget"})
    points = points[np.isfinite(points["budget"])]
    keep = []
    for budget, part in points.groupby("budget"):
        sizes = part["params"].nunique()
        if sizes < 3 and parabolas:
            dropped.append({"budget": float(budget), "runs": int(len(part)),
                            "why": f"{sizes} model sizes (a parabola needs 3)"})
        else:
            keep.append(part.sort_values("params"))
    if len(keep) < 3 and parabolas:
        raise InputError(f"{name}: {len(keep)} budgets with three or more model sizes, but a "
                         "frontier through the budgets' optima needs three", source=source)
    if not parabolas and sum(len(k) for k in keep) < 8:
        raise InputError(f"{name}: {sum(len(k) for k in keep)} runs, but the Chinchilla law "
                         "(5 parameters) needs at least 8", source=source)
    points = pd.concat(keep)
    digest = hashlib.sha256(np.ascontiguousarray(
        points[["compute", "params", "tokens", "loss"]].to_numpy(dtype=float)).tobytes())
    budget = points["budget"].to_numpy()
    return _Arm(name, budget, np.log(points["compute"].to_numpy()),
                np.log(points["params"].to_numpy()), np.log(points["tokens"].to_numpy()),
                points["loss"].to_numpy(),
                Groups.from_sorted_codes(budget), len(points), dropped,
                convention_text(convention, settings["flops_per_param_token"]),
                digest.hexdigest(), ratio)


#: Columns of a transformer's shape; with them the exact count is compared with 6·N·D per run.
SHAPE_COLUMNS = ("d_model", "n_layers", "n_ctx", "vocab")


def _count_ratios(frame, given, points, k: float) -> dict | None:
    """How the runs' FLOPs compare with k·N·D: the compute column's over k·N·D, or, where the
    frame carries a transformer's shape, Hoffmann et al.'s count over 6·N (non-embedding N)."""
    if all(c in frame for c in SHAPE_COLUMNS):
        from scalekit.flops import flops_per_token

        rows = [tuple(r) for r in frame[list(SHAPE_COLUMNS)].astype(int).to_numpy().tolist()]
        by_shape = {}   # a sweep's runs share few shapes: count each once
        for row in rows:
            if row not in by_shape:
                shape = dict(zip(SHAPE_COLUMNS, row, strict=True))
                by_shape[row] = (flops_per_token("chinchilla", **shape).flops_per_token
                                 / flops_per_token("6N", **shape).flops_per_token)
        ratio = np.array([by_shape[row] for row in rows])
        what = "Hoffmann et al.'s exact count over 6·N (from the shape columns)"
    elif given is not None and "params" in frame and "tokens" in frame:
        six = k * points["params"].to_numpy() * points["tokens"].to_numpy()
        ratio = pd.to_numeric(given).to_numpy(dtype=float) / six
        what = f"the compute column over {k:g}·N·D"
    else:
        return None
    off = np.abs(ratio - 1) > COUNT_MISMATCH
    return {"what": what, "median": float(np.median(ratio)), "low": float(ratio.min()),
            "high": float(ratio.max()), "share_off": float(off.mean())}


def _targets(target_compute, arms) -> list[float]:
    if target_compute is None:
        shared = set(arms[0].budgets) & set(arms[1].budgets)
        return [float(max(shared) if shared else min(a.budgets.max() for a in arms))]
    values = [target_compute] if np.isscalar(target_compute) else list(target_compute)
    for value in values:
        check_number("target_compute", value, low=0, low_open=True)
    return sorted(float(v) for v in values)


def _flop_checks(arms) -> tuple[list[Diagnostic], list[str]]:
    """Warn where an arm's runs count FLOPs more than :data:`COUNT_MISMATCH` away from 6·N·D."""
    diagnostics, notes = [], []
    for arm in arms:
        r = arm.count_ratio
        if r is None:
            continue
        text = (f"{arm.name}: {r['what']} is {format_number(r['median'], 3)} (median; "
                f"{format_number(r['low'], 3)}–{format_number(r['high'], 3)} over its runs)")
        if r["share_off"] > 0:
            diagnostics.append(Diagnostic(
                "flop_count_mismatch", "warning",
                text + f"; {100 * r['share_off']:.0f}% of its runs are more than "
                f"{100 * COUNT_MISMATCH:g}% away: which count is used moves k; compare only "
                "arms counted the same way", value=r["median"]))
        else:
            notes.append(text)
    return diagnostics, notes


def _paired_indices(arms, n_boot: int, rng) -> list[np.ndarray]:
    """Resampled point indices (B, n) per arm: runs drawn within each budget; one set of
    uniform draws per budget value, shared by the arms (paired where they ran the same
    number of sizes there)."""
    keys = sorted({float(f"{b:.3g}") for arm in arms for b in arm.budgets})
    width = {key: max(int(arm.groups.sizes[np.isclose(arm.budgets, key, rtol=1e-2)].sum())
                      for arm in arms) for key in keys}
    draws = {key: rng.random((n_boot, width[key])) for key in keys}
    out = []
    for arm in arms:
        index = np.empty((n_boot, arm.log_c.size), dtype=int)
        for start, size, budget in zip(arm.groups.starts, arm.groups.sizes, arm.budgets,
                                       strict=True):
            u = draws[float(f"{budget:.3g}")][:, :size]
            index[:, start:start + size] = start + (u * size).astype(int)
        out.append(np.sort(index, axis=1))
    return out


def _minima(arm: _Arm, idx: np.ndarray | None = None) -> np.ndarray:
    """Least loss of each budget's parabola in log N over its sampled sizes (K,); the least
    loss drawn where the sizes drawn are too few for a parabola."""
    x = arm.log_n if idx is None else arm.log_n[idx]
    y = arm.loss if idx is None else arm.loss[idx]
    coef = fit_parabolas(x, y, arm.groups)
    c0, c1, c2 = coef.T
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(c2 > 0, np.clip(-c1 / (2 * c2), -1, 1), 1.0)
    best = np.fmin(np.fmin(c0 - c1 + c2, c0 + c1 + c2), c0 + c1 * u + c2 * u * u)
    # a resample with fewer than three distinct sizes in a budget: its least loss drawn
    return np.where(np.isfinite(best), best, np.minimum.reduceat(y, arm.groups.starts))


def _vertex_inside(arm: _Arm) -> np.ndarray:
    """Whether each budget's parabola has its vertex within the sampled sizes."""
    coef = fit_parabolas(arm.log_n, arm.loss, arm.groups)
    c0, c1, c2 = coef.T
    with np.errstate(divide="ignore", invalid="ignore"):
        u = -c1 / (2 * c2)
    return (c2 > 0) & (np.abs(u) <= 1)


@dataclass
class _Frontier:
    """One arm's frontier: its parameters at the full data and per replicate."""

    arm: _Arm
    law: str
    log_c: np.ndarray            # (K,) log mean compute of each budget used
    log_l: np.ndarray            # (K,) log L* of each budget used
    theta: np.ndarray            # (P,)
    boot: np.ndarray             # (B, P), nan rows where the fit failed
    used: np.ndarray             # (K_all,) bool: budgets in the frontier
    boot_l: np.ndarray           # (B, K) replicates of log L*
    failed: int = 0
    misfit: dict = field(default_factory=dict)

    @property
    def n_boot(self) -> int:
        return len(self.boot)

    @classmethod
    def fit(cls, arm: _Arm, law: str, index: np.ndarray) -> _Frontier:
        used = _vertex_inside(arm)
        if used.sum() < 3:
            raise InputError(f"{arm.name}: {int(used.sum())} budgets have their least loss "
                             "inside the sizes they sampled, but a frontier needs three")
        for k in np.flatnonzero(~used):
            arm.dropped.append({"budget": float(arm.budgets[k]), "runs": int(arm.groups.sizes[k]),
                                "why": "its least loss lies at an edge of the sizes sampled"})
        arm.runs_used = int(arm.groups.sizes[used].sum())
        log_c = arm.budget_log_c[used]
        log_l = np.log(_minima(arm))[used]
        boot_l = np.log(np.stack([_minima(arm, i)[used] for i in index]))
        theta, boot = _fit_law(law, log_c, log_l, boot_l)
        failed = int((~np.isfinite(boot).all(axis=1)).sum())
        fit = cls(arm, law, log_c, log_l, theta, boot, used, boot_l, failed)
        fit.misfit = fit.lack_of_fit()
        if fit.misfit["p"] is not None and fit.misfit["p"] < MISFIT_P:
            # the law misses the budgets by more than their noise: widen every replicate's
            # spread by the Birge ratio sqrt(chi2 / dof), in a space where every value is
            # a valid law (log E, log A for the saturating law)
            fit.boot = _from_free(law, _to_free(law, theta) + fit.misfit["inflation"] * (
                _to_free(law, boot) - _to_free(law, theta)))
        return fit

    @classmethod
    def fit_runs(cls, arm: _Arm, counts: np.ndarray) -> _Frontier:
        """Chinchilla's L(N, D) fitted to every run by the shared engine, the replicates (run
        counts ``counts``, (B, n)) in one batched call; its frontier E + P·(C/6)^-gamma is
        kept as the saturating law's (E, P·6^gamma, gamma)."""
        from scalekit.fit import fit_law

        X = {"params": np.exp(arm.log_n), "tokens": np.exp(arm.log_d)}
        full = fit_law("chinchilla", X, arm.loss)
        names = full.law.param_names
        natural = np.array([full.values[p] for p in names])
        boot = _chinchilla_frontier(_best_of_starts(
            full.law, X, np.log(arm.loss), natural, len(counts), loss="huber",
            weights=np.repeat(counts, _FLOOR_STARTS.size, axis=0)))
        theta = _chinchilla_frontier(natural)
        used = np.ones(arm.groups.sizes.size, bool)
        log_c = arm.budget_log_c
        log_l = np.log(np.minimum.reduceat(arm.loss, arm.groups.starts))
        failed = int((~np.isfinite(boot).all(axis=1)).sum())
        fit = cls(arm, "saturating", log_c, log_l, theta, boot, used,
                  np.full((len(counts), log_l.size), np.nan), failed)
        fit.misfit = {"chi2": None, "dof": None, "p": None, "inflation": 1.0}
        return fit

    def minima_variance(self) -> np.ndarray:
        """Variance of each used budget's log L*: the bootstrap's, times n / (n - 3) for the
        parabola's three parameters (a bootstrap of n points underestimates it so)."""
        n = self.arm.groups.sizes[self.used].astype(float)
        return np.nanvar(self.boot_l, axis=0) * n / np.maximum(n - 3, 1)

    def lack_of_fit(self) -> dict:
        """Chi-square of the budgets' log L* about the law, each weighed by its bootstrap
        variance; its p-value on K - P degrees of freedom and the Birge ratio."""
        from scipy.stats import chi2

        resid = self.log_l - self.log_loss(self.log_c)
        var = self.minima_variance()
        dof = self.log_l.size - self.theta.size
        if dof < 1 or not np.all(var > 0):
            return {"chi2": None, "dof": dof, "p": None, "inflation": 1.0}
        stat = float((resid ** 2 / var).sum())
        return {"chi2": stat, "dof": int(dof), "p": float(chi2.sf(stat, dof)),
                "inflation": float(max(1.0, np.sqrt(stat / dof)))}

    def log_loss(self, log_c, theta=None) -> np.ndarray:
        """log L*(C) at ``log_c`` for the fit's (P,) or replicates' (B, P) parameters."""
        return _law_log_loss(self.law, self.theta if theta is None else theta, log_c)

    def log_compute(self, log_l, theta=None) -> np.ndarray:
        """log C at which L*(C) reaches ``log_l`` (inf where it never does)."""
        return _law_log_compute(self.law, self.theta if theta is None else theta, log_l)

    def exponent(self, theta=None) -> np.ndarray:
        theta = self.theta if theta is None else theta
        return theta[..., 1] if self.law == "power" else theta[..., 2]

    def arm_record(self, level: float) -> dict:
        boot = self.exponent(self.boot)
        arm = self.arm
        names = ("log_a", "b") if self.law == "power" else ("E", "A", "alpha")
        return {"name": arm.name, "input_sha256": arm.input_sha256, "runs_used": arm.runs_used,
                "dropped": arm.dropped, "convention": arm.convention,
                "budgets": [float(b) for b in arm.budgets[self.used]],
                "exponent": float(self.exponent()), "lack_of_fit": self.misfit,
                "exponent_interval": _interval(boot, level),
                "parameters": {n: float(v) for n, v in zip(names, self.theta, strict=True)}}


def _fit_law(law, log_c, log_l, boot_l) -> tuple[np.ndarray, np.ndarray]:
    """Frontier parameters at the data (P,) and per replicate (B, P)."""
    if law == "power":
        both = np.vstack([log_l, boot_l])
        xc = log_c - log_c.mean()
        slope = (both - both.mean(1, keepdims=True)) @ xc / (xc @ xc)
        icpt = both.mean(1) - slope * log_c.mean()
        theta = np.stack([icpt, -slope], -1)
        return theta[0], theta[1:]
    from scalekit.fit import fit_law

    compute = np.exp(log_c)
    full = fit_law("frontier", {"compute": compute}, np.exp(log_l), loss="squared")
    theta = np.array([full.values[p] for p in ("E", "A", "alpha")])
    # every replicate at once (one data set per row)
    rows = np.repeat(boot_l, _FLOOR_STARTS.size, axis=0)
    return theta, _best_of_starts(full.law, {"compute": compute}, rows, theta, len(boot_l),
                                  loss="squared")


#: Starts of a replicate's saturating fit: the full fit's log E shifted by these.
_FLOOR_STARTS = np.array([0.0, -1.0, 0.3])


def _best_of_starts(law, X, y, theta, n_boot: int, **options) -> np.ndarray:
    """Natural parameters (B, P) of ``n_boot`` replicates fitted in one batched call, each
    from the full fit's ``theta`` and two starts with a lower and a higher floor
    (:data:`_FLOOR_STARTS`); the best of each replicate's starts is kept, nan rows where
    none converged. ``y`` and the ``weights`` in ``options`` hold a row per start."""
    from scalekit.fit import minimize_batch

    z0 = law.to_fitting(theta)
    shifts = np.zeros((_FLOOR_STARTS.size, z0.size))
    shifts[:, 0] = _FLOOR_STARTS
    starts = np.tile(z0 + shifts, (n_boot, 1))
    batch = minimize_batch(law, X, y, starts, delta=1e-3, **options)
    objective = np.where(np.isfinite(batch.objective), batch.objective, np.inf).reshape(
        n_boot, _FLOOR_STARTS.size)
    z = batch.z.reshape(n_boot, _FLOOR_STARTS.size, -1)[np.arange(n_boot), objective.argmin(1)]
    boot = np.array([law.to_natural(row) for row in z])
    boot[~np.isfinite(objective.min(1))] = np.nan
    return boot


def _chinchilla_frontier(theta: np.ndarray) -> np.ndarray:
    """(E, A, B, alpha, beta) of Chinchilla's law to its frontier under C = 6ND as the
    saturating law's (E, A', gamma): L*(C) = E + A'·C^-gamma (Hoffmann et al. 2022, eq. 4)."""
    e, a, b, alpha, beta = np.moveaxis(np.asarray(theta, dtype=float), -1, 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g = (alpha * a / (beta * b)) ** (1 / (alpha + beta))
        gamma = alpha * beta / (alpha + beta)
        scale = (a * g ** -alpha + b * g ** beta) * 6.0 ** gamma
    return np.stack([e, scale, gamma], -1)


def _paired_run_counts(arms, n_boot: int, rng) -> list[np.ndarray]:
    """Run multiplicities (B, n) per arm: runs drawn with replacement from the union of both
    arms' (N, D) configurations, so a configuration both arms ran is drawn for both."""
    keys = [list(zip(np.round(a.log_n, 2), np.round(a.log_d, 2), strict=True)) for a in arms]
    union = sorted(set(keys[0]) | set(keys[1]))
    where = {k: i for i, k in enumerate(union)}
    drawn = rng.multinomial(len(union), np.full(len(union), 1 / len(union)), size=n_boot)
    return [drawn[:, [where[k] for k in arm_keys]].astype(float) for arm_keys in keys]


def _to_free(law, theta):
    """Parameters where any value is a valid law: log E and log A of the saturating law."""
    theta = np.array(theta, dtype=float)
    if law == "saturating":
        with np.errstate(divide="ignore"):
            theta[..., :2] = np.log(theta[..., :2])
    return theta


def _from_free(law, free):
    free = np.array(free, dtype=float)
    if law == "saturating":
        free[..., :2] = np.exp(free[..., :2])
    return free


def _columns(theta) -> list:
    """Each parameter of (P,) ``theta`` as a scalar, of (B, P) as a (B, 1) column."""
    theta = np.asarray(theta, dtype=float)
    return [theta[..., i:i + 1] if theta.ndim > 1 else theta[i] for i in range(theta.shape[-1])]


def _law_log_loss(law, theta, log_c):
    log_c = np.asarray(log_c, dtype=float)
    if law == "power":
        icpt, slope = _columns(theta)
        return icpt - slope * log_c
    e, a, alpha = _columns(theta)
    return np.log(e + a * np.exp(-alpha * log_c))


def _law_log_compute(law, theta, log_l):
    log_l = np.asarray(log_l, dtype=float)
    if law == "power":
        icpt, slope = _columns(theta)
        return (icpt - log_l) / slope
    e, a, alpha = _columns(theta)
    gap = np.exp(log_l) - e
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (np.log(a) - np.log(np.where(gap > 0, gap, 1.0))) / alpha,
                        np.inf)


def _interval(values, level: float) -> list:
    """The central ``level`` interval of the finite ``values`` ([None, None] if none)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if not values.size:
        return [None, None]
    lo, hi = _percentiles(values, [50 * (1 - level), 50 * (1 + level)])
    return [_plain(lo), _plain(hi)]


def _percentiles(values, q, axis: int = 0) -> np.ndarray:
    """``np.nanpercentile``, but the nearest rank where some values are infinite (a baseline
    that never reaches the variant's loss), so no inf - inf is interpolated."""
    values = np.asarray(values, dtype=float)
    method = "linear" if np.isfinite(values[~np.isnan(values)]).all() else "nearest"
    with np.errstate(invalid="ignore"):
        return np.nanpercentile(values, q, axis=axis, method=method)


def _plain(value) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


def _log_multiplier(fits, log_c, theta_b=None, theta_v=None):
    """log k at ``log_c``: the baseline's compute for the variant's loss, over C."""
    base, var = fits
    return base.log_compute(var.log_loss(log_c, theta_v), theta_b) - log_c


def _target_row(fits, compute: float, level: float, arms) -> dict:
    base, var = fits
    log_c = np.log(compute)
    log_k = _log_multiplier(fits, log_c)
    log_k_boot = _log_multiplier(fits, log_c, base.boot, var.boot)
    l_b, l_v = np.exp(base.log_loss(log_c)), np.exp(var.log_loss(log_c))
    lb_boot, lv_boot = np.exp(base.log_loss(log_c, base.boot)), np.exp(var.log_loss(log_c, var.boot))
    k_interval = _interval(np.exp(log_k_boot), level)
    lo, hi = (np.inf if v is None else v for v in k_interval)
    verdict = "better" if lo > 1 else "worse" if hi < 1 else "not_decided"
    largest = min(float(np.exp(f.log_c.max())) for f in fits)
    return {"compute": float(compute), "loss_baseline": float(l_b),
            "loss_baseline_interval": _interval(lb_boot, level), "loss_variant": float(l_v),
            "loss_variant_interval": _interval(lv_boot, level),
            "multiplier": _plain(np.exp(log_k)), "multiplier_interval": k_interval,
            "loss_difference": float(l_v - l_b),
            "loss_difference_interval": _interval(lv_boot - lb_boot, level),
            "extrapolation": float(compute / largest), "verdict": verdict}


def _exponents(fits, level: float) -> dict:
    base, var = fits
    diff = float(var.exponent() - base.exponent())
    boot = var.exponent(var.boot) - base.exponent(base.boot)
    interval = _interval(boot, level)
    differ = bool(interval[0] is not None and not (interval[0] <= 0 <= interval[1]))
    cross = _crossing(fits, base.theta, var.theta)
    crossings = np.array([_crossing(fits, tb, tv) for tb, tv in zip(base.boot, var.boot,
                                                                      strict=True)])
    found = np.isfinite(crossings)
    return {"difference": diff, "difference_interval": interval, "differ": differ,
            "crossing": None if not np.isfinite(cross) else float(np.exp(cross)),
            "crossing_interval": (_interval(np.exp(crossings[found]), level) if found.any()
                                  else [None, None]),
            "crossing_share": float(found.mean()) if found.size else 0.0}


def _crossing(fits, theta_b, theta_v) -> float:
    """log C of the first crossing of the frontiers on :data:`_CROSS_GRID` (nan if none)."""
    base, var = fits
    if not (np.isfinite(theta_b).all() and np.isfinite(theta_v).all()):
        return np.nan
    gap = var.log_loss(_CROSS_GRID, theta_v) - base.log_loss(_CROSS_GRID, theta_b)
    change = np.flatnonzero(np.sign(gap[:-1]) * np.sign(gap[1:]) < 0)
    if not change.size:
        return np.nan
    i = change[0]
    x0, x1, g0, g1 = _CROSS_GRID[i], _CROSS_GRID[i + 1], gap[i], gap[i + 1]
    return float(x0 - g0 * (x1 - x0) / (g1 - g0))


def _curve_rows(fits, targets, level: float, points: int = 40) -> list[dict]:
    """Both frontiers and k on a log grid from the smallest budget to the largest target."""
    lo = min(f.log_c.min() for f in fits)
    hi = max(max(f.log_c.max() for f in fits), np.log(max(targets)))
    grid = np.linspace(lo, hi, points)
    base, var = fits
    tails = [50 * (1 - level), 50 * (1 + level)]
    out = {"compute": np.exp(grid)}
    for name, fit in (("baseline", base), ("variant", var)):
        boot = np.exp(fit.log_loss(grid, fit.boot))
        out[f"loss_{name}"] = np.exp(fit.log_loss(grid))
        out[f"loss_{name}_lo"], out[f"loss_{name}_hi"] = _percentiles(boot, tails)
    k_boot = np.exp(_log_multiplier(fits, grid, base.boot, var.boot))
    out["multiplier"] = np.exp(_log_multiplier(fits, grid))
    with np.errstate(invalid="ignore"):
        out["multiplier_lo"], out["multiplier_hi"] = _percentiles(k_boot, tails)
    return [{k: _plain(v[g]) for k, v in out.items()} for g in range(points)]


def _optima_rows(fits) -> list[dict]:
    return [{"arm": f.arm.name, "compute": float(np.exp(c)), "loss": float(np.exp(v))}
            for f in fits for c, v in zip(f.log_c, f.log_l, strict=True)]


#: Candidate budgets beyond an arm's largest, as multiples of it, for the runs that decide.
NEW_BUDGETS = (3.0, 10.0)


def _decide(fits, compute: float, level: float) -> list[dict]:
    """Run sets that would narrow the interval of log k at ``compute`` most, by the delta
    method: each arm's frontier parameters have covariance ``(J^T W J)^-1`` with ``J`` the
    law's Jacobian at its budgets and ``W`` the inverse bootstrap variances of their log L*.
    Candidates: one budget's runs again in one arm or in both (halving its variance), or a
    new budget at :data:`NEW_BUDGETS` times the largest, in both arms, with as many runs as
    the largest budget. The three that narrow it most, each with its cost and whether it
    would decide the verdict were k to stay at its estimate."""
    z = _z(level)
    log_c = np.log(compute)
    log_k = float(_log_multiplier(fits, log_c))
    grads = [_gradient(fits, a, log_c) for a in range(2)]
    variances = [f.minima_variance() for f in fits]
    jacobians = [_jacobian(f, f.log_c) for f in fits]

    def spread(extra) -> float:
        total = 0.0
        for a, fit in enumerate(fits):
            var = variances[a]
            rows, weights = [jacobians[a]], [1 / np.maximum(var, 1e-12)]
            for where, factor in ((w, f) for arm, w, f in extra if arm == a):
                if isinstance(where, int):
                    weights[0][where] *= factor
                else:
                    rows.append(_jacobian(fit, np.array([where])))
                    weights.append(np.array([1 / max(float(np.median(var)), 1e-12)]))
            j_all, w_all = np.vstack(rows), np.concatenate(weights)
            cov = np.linalg.pinv(j_all.T @ (w_all[:, None] * j_all))
            total += float(grads[a] @ cov @ grads[a])
        return float(np.sqrt(max(total, 0.0)))

    now = spread([])
    candidates = []
    for a, fit in enumerate(fits):
        sizes = fit.arm.groups.sizes[fit.used]
        for k in range(fit.log_c.size):
            runs, c = int(sizes[k]), float(np.exp(fit.log_c[k]))
            candidates.append(({"arm": fit.arm.name, "budget": c, "runs": runs,
                                "cost": runs * c}, [(a, k, 2.0)]))
            if a == 0 and k < fits[1].log_c.size and np.isclose(
                    fits[1].log_c[k], fit.log_c[k], atol=0.05):
                candidates.append(({"arm": "both", "budget": c, "runs": 2 * runs,
                                    "cost": 2 * runs * c}, [(0, k, 2.0), (1, k, 2.0)]))
    top = max(f.log_c.max() for f in fits)
    runs = int(max(f.arm.groups.sizes[f.used][-1] for f in fits))
    for factor in NEW_BUDGETS:
        c = float(np.exp(top) * factor)
        candidates.append(({"arm": "both", "budget": c, "runs": 2 * runs, "cost": 2 * runs * c},
                           [(0, np.log(c), 1.0), (1, np.log(c), 1.0)]))
    rows = []
    for record, extra in candidates:
        after = spread(extra)
        rows.append({"target": float(compute), **record, "width_now": float(np.exp(z * now)),
                     "width_after": float(np.exp(z * after)),
                     "decides": bool(z * after < abs(log_k))})
    rows.sort(key=lambda r: (r["width_after"], r["cost"]))
    return rows[:3]


def _jacobian(fit: _Frontier, log_c: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """d log L*(C) / d theta at ``log_c`` (K, P), by central differences."""
    return _central_difference(lambda theta: fit.log_loss(log_c, theta), fit.theta, step)


def _gradient(fits, arm: int, log_c: float, step: float = 1e-6) -> np.ndarray:
    """d log k / d theta of ``arm`` at ``log_c`` (P,), by central differences."""
    def log_k(moved):
        thetas = [fits[0].theta, fits[1].theta]
        thetas[arm] = moved
        return float(_log_multiplier(fits, log_c, thetas[0], thetas[1]))

    return _central_difference(log_k, fits[arm].theta, step)


def _central_difference(f, theta: np.ndarray, step: float) -> np.ndarray:
    """d f / d theta (..., P) by central differences, each step relative to its parameter."""
    cols = []
    for p in range(theta.size):
        h = step * max(1.0, abs(theta[p]))
        up, down = theta.copy(), theta.copy()
        up[p] += h
        down[p] -= h
        cols.append((f(up) - f(down)) / (2 * h))
    return np.stack(cols, -1)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))
