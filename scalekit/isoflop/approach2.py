"""Approach 2: IsoFLOP profiles (Hoffmann et al. 2022, §3.2).

Per compute budget, fit a parabola of loss in log N (or log D) and take its
vertex as the budget's optimum; bootstrap the points within each budget for the
vertex interval; then fit ``N* = k_N·C^a`` and ``D* = k_D·C^b`` through the
vertices. Each budget is checked for the known sources of bias of the method
(Porian et al. 2024; Li et al. 2025, "(Mis)Fitting scaling laws"): a sampled
grid off-centre or lopsided around the vertex, a parabola opening downward,
a vertex outside the sampled range.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.errors import InputError
from scalekit.isoflop.budgets import assign_budgets
from scalekit.isoflop.estimator import AllocationEstimator
from scalekit.isoflop.parabolas import Groups, fit_parabolas, resample_within_groups, vertices
from scalekit.isoflop.powerfit import fit_power_law

#: Budget checks, with the condition each one flags.
CHECKS = {
    "downward": "the parabola opens downward (no minimum); the budget is left out",
    "outside": "the vertex lies outside the sampled range (extrapolated)",
    "off_centre": "the vertex lies in the outer quarter of the sampled range on one side",
    "asymmetric": "fewer than a quarter of the budget's points lie on one side of the vertex",
}
#: Budgets with these flags do not enter the power-law fits.
EXCLUDED = ("downward",)


class IsoFLOPProfiles(AllocationEstimator):
    """IsoFLOP-profile estimate of the compute-optimal N*(C) and D*(C).

    Parameters
    ----------
    profile : {"params", "tokens"}
        Fit the parabola in log N or in log D.
    figures : int
        Significant figures to which budgets are rounded (when ``budgets`` is None).
    budgets : sequence of float, optional
        The study's nominal budgets; each point joins the nearest within ``tolerance``.
    tolerance : float
        Decades of compute a point may lie from its nominal budget.
    window : int, optional
        Fit each parabola only to this many consecutive sizes centred on the budget's
        lowest loss (at least 3). A parabola is a local approximation of the profile;
        far points pull its vertex toward the centre of the grid.
    n_boot : int
        Bootstrap resamples (points resampled within each budget); 0 for none. A
        replicate's vertex farther than the sampled span beyond either end of the
        sampled range counts as no vertex (``boot_no_vertex`` is their fraction).
    ci_level : float
    convention : {"6ND", "counted"}
        FLOP convention (see :mod:`scalekit.isoflop.points`).
    flops_per_param_token : float
    seed : int

    Attributes
    ----------
    budgets_ : DataFrame
        One row per budget: points, sampled range, ``params_opt``/``tokens_opt`` with
        intervals, ``loss_opt``, ``curvature``, ``offset`` (vertex position in the
        sampled range, -1 … 1), ``flags``.
    params_law_, tokens_law_ : PowerLawFit
        ``N* = k_N·C^a`` and ``D* = k_D·C^b``.
    vertex_replicates_ : ndarray (n_boot, K)
        Bootstrap replicates of the log-vertex per budget.
    warnings_ : list of str
    """

    def __init__(self, *, profile: str = "params", figures: int = 2, budgets=None,
                 tolerance: float = 0.1, window: int | None = None, n_boot: int = 1000,
                 ci_level: float = 0.95, convention: str = "6ND",
                 flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN, seed: int = 0) -> None:
        self.profile = profile
        self.figures = figures
        self.budgets = budgets
        self.tolerance = tolerance
        self.window = window
        self.n_boot = n_boot
        self.ci_level = ci_level
        self.convention = convention
        self.flops_per_param_token = flops_per_param_token
        self.seed = seed

    def settings(self) -> dict:
        """The settings, as written into reports."""
        return {"profile": self.profile, "figures": self.figures,
                "budgets": None if self.budgets is None else list(self.budgets),
                "tolerance": self.tolerance, "window": self.window, "n_boot": self.n_boot,
                "ci_level": self.ci_level, "convention": self.convention,
                "flops_per_param_token": self.flops_per_param_token, "seed": self.seed}

    def fit(self, data, *, source: str | None = None) -> "IsoFLOPProfiles":
        """Fit the profiles of ``data`` (tidy points: compute/params/tokens, loss)."""
        check_choice("profile", self.profile, ("params", "tokens"))
        check_number("n_boot", self.n_boot, low=0, integer=True)
        check_number("ci_level", self.ci_level, low=0, high=1, low_open=True, high_open=True)
        points = self._points(data, source)
        assignment = assign_budgets(points["compute"].to_numpy(), figures=self.figures,
                                    nominal=self.budgets, tolerance=self.tolerance)
        points["budget"] = assignment.budget
        points = points[np.isfinite(points["budget"])].sort_values(["budget", self.profile])
        _check_budgets(points, self.profile, source)
        if self.window is not None:
            check_number("window", self.window, low=3, integer=True)
            points = _around_minimum(points, self.window)
        other = self._other_name
        x = np.log(points[self.profile].to_numpy())
        y = points["loss"].to_numpy()
        groups = Groups.from_sorted_codes(points["budget"].to_numpy())
        member = groups.member

        coef = fit_parabolas(x, y, groups)
        x_star, loss_star = vertices(coef, x, groups)
        rng = np.random.default_rng(self.seed)
        replicates = None
        if self.n_boot:
            indices = resample_within_groups(groups, self.n_boot, rng)
            replicates = vertices(fit_parabolas(x, y, groups, indices), x, groups)[0]

        lo = np.minimum.reduceat(x, groups.starts)
        hi = np.maximum.reduceat(x, groups.starts)
        if replicates is not None:
            wild = (replicates < 2 * lo - hi) | (replicates > 2 * hi - lo)
            replicates = np.where(wild, np.nan, replicates)
        budget = points["budget"].to_numpy()[groups.starts]
        if self.budgets is None:  # rounded labels: use the points' own (geometric mean) compute
            budget = np.exp(np.add.reduceat(np.log(points["compute"].to_numpy()), groups.starts)
                            / groups.sizes)
        flags = _flag_budgets(coef, x_star, x, member, groups, lo, hi)
        excluded = np.array([any(f in EXCLUDED for f in row) for row in flags])
        x_star = np.where(excluded, np.nan, x_star)
        if replicates is not None:
            replicates = np.where(excluded[None, :], np.nan, replicates)
        if (~excluded).sum() < 2:
            raise InputError("fewer than two budgets have an IsoFLOP parabola that opens upward; "
                             "no power law can be fitted", source=source)

        # The other variable at the vertex: a line of log other on log x within each budget
        # (exact under C = k·N·D, close to it for counted FLOPs).
        log_other = np.log(points[other].to_numpy())
        slope, intercept = _lines_per_group(x, log_other, groups)
        other_star = intercept + slope * x_star
        other_reps = None if replicates is None else intercept + slope * replicates

        tails = [50 * (1 - self.ci_level), 50 * (1 + self.ci_level)]
        table = pd.DataFrame({"budget": budget, "n_points": groups.sizes,
                              f"{self.profile}_min": np.exp(lo),
                              f"{self.profile}_max": np.exp(hi)})
        for name, centre, reps in ((self.profile, x_star, replicates),
                                   (other, other_star, other_reps)):
            table[f"{name}_opt"] = np.exp(centre)
            if reps is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # budgets left out: all nan
                    lo_ci, hi_ci = np.nanpercentile(reps, tails, axis=0)
                table[f"{name}_lo"], table[f"{name}_hi"] = np.exp(lo_ci), np.exp(hi_ci)
        if replicates is not None:
            table["boot_no_vertex"] = np.isnan(replicates).mean(axis=0)
        table["loss_opt"] = np.where(excluded, np.nan, loss_star)
        table["curvature"] = coef[:, 2] / ((hi - lo) / 2) ** 2
        table["offset"] = (x_star - (lo + hi) / 2) / np.where(hi > lo, (hi - lo) / 2, 1.0)
        table["flags"] = [",".join(row) for row in flags]
        self.budgets_ = table.reset_index(drop=True)
        self.assignment_ = assignment
        self.points_ = points.reset_index(drop=True)
        self.vertex_replicates_ = replicates
        self._other_replicates = other_reps
        self.params_law_, self.tokens_law_ = self._power_laws(np.ones(budget.size, bool))
        self.warnings_ = self._warnings(flags, assignment)
        return self

    def refit_without(self, flag: str):
        """``(params_law, tokens_law)`` refitted without the budgets carrying ``flag``."""
        self._check_fitted()
        check_choice("flag", flag, tuple(CHECKS))
        keep = ~self.budgets_["flags"].str.split(",").apply(lambda row: flag in row).to_numpy()
        if keep.sum() < 2:
            return None
        return self._power_laws(keep)

    def _power_laws(self, keep: np.ndarray):
        table = self.budgets_
        reps = {self.profile: self.vertex_replicates_, self._other_name: self._other_replicates}
        laws = []
        for name in ("params", "tokens"):
            values = np.where(keep, table[f"{name}_opt"].to_numpy(), np.nan)
            rep = reps[name]
            rep = None if rep is None else np.exp(np.where(keep[None, :], rep, np.nan))
            laws.append(fit_power_law(table["budget"].to_numpy(), values, replicates=rep,
                                      ci_level=self.ci_level))
        return tuple(laws)

    @property
    def _other_name(self) -> str:
        return "tokens" if self.profile == "params" else "params"

    def _warnings(self, flags, assignment) -> list[str]:
        out = []
        if assignment.n_left_out:
            out.append(f"{assignment.n_left_out} points lie near no nominal budget and were "
                       "left out")
        for budget, row in zip(self.budgets_["budget"], flags):
            for flag in row:
                out.append(f"budget {budget:.3g} FLOPs: {CHECKS[flag]}")
        return out

    def to_json(self) -> dict:
        """Per-approach body of the report: a, b, k_N, k_D with intervals, budgets, warnings."""
        self._check_fitted()
        return self._allocation_json(budgets=self.budgets_, budgeting=self.assignment_.method,
                                     profile=self.profile)


def _check_budgets(points: pd.DataFrame, profile: str, source: str | None) -> None:
    counts = points.groupby("budget")[profile].agg(["size", "nunique"])
    if len(counts) < 2:
        found = ", ".join(f"{b:.2g}" for b in counts.index) or "none"
        raise InputError(f"IsoFLOP profiles need at least two compute budgets; found "
                         f"{len(counts)} ({found})", source=source, column="compute")
    few = counts[counts["nunique"] < 3]
    if len(few):
        budget, row = next(iter(few.iterrows()))
        raise InputError(f"budget {budget:.3g} FLOPs has {int(row['nunique'])} distinct "
                         f"{profile} values, but a parabola needs at least three (give the "
                         "study's nominal budgets, `budgets` / --budgets, or round to fewer "
                         "significant figures, `figures` / --figures)",
                         source=source, column="compute")


def _around_minimum(points: pd.DataFrame, window: int) -> pd.DataFrame:
    """Keep, per budget, ``window`` consecutive sizes centred on the lowest loss."""
    kept = []
    for _, group in points.groupby("budget", sort=True):
        best = int(np.argmin(group["loss"].to_numpy()))
        start = max(0, min(best - window // 2, len(group) - window))
        kept.append(group.iloc[start:start + window])
    return pd.concat(kept)


def _flag_budgets(coef, x_star, x, member, groups, lo, hi) -> list[list[str]]:
    flags = []
    for k in range(groups.sizes.size):
        row = []
        if not coef[k, 2] > 0:
            flags.append(["downward"])
            continue
        if x_star[k] < lo[k] or x_star[k] > hi[k]:
            row.append("outside")
        offset = (x_star[k] - (lo[k] + hi[k]) / 2) / ((hi[k] - lo[k]) / 2)
        if abs(offset) > 0.5:
            row.append("off_centre")
        xs = x[member == k]
        if min((xs < x_star[k]).sum(), (xs > x_star[k]).sum()) < 0.25 * xs.size:
            row.append("asymmetric")
        flags.append(row)
    return flags


def _lines_per_group(x, y, groups):
    member = groups.member
    n = groups.sizes
    mx = np.add.reduceat(x, groups.starts) / n
    my = np.add.reduceat(y, groups.starts) / n
    dx, dy = x - mx[member], y - my[member]
    slope = np.add.reduceat(dx * dy, groups.starts) / np.add.reduceat(dx * dx, groups.starts)
    return slope, my - slope * mx

