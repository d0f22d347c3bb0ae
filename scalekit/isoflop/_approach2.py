"""Approach 2: IsoFLOP profiles (Hoffmann et al. 2022, §3.2).

Per compute budget, fit a parabola of loss in log N (or log D) to the points
around the minimum that it describes (:mod:`scalekit.isoflop._windows`) and take
its vertex as the budget's optimum; then fit ``N* = k_N·C^a`` and
``D* = k_D·C^b`` through the vertices. Budgets with fewer than three sizes are
left out and said so. The interval comes from a two-stage bootstrap: the losses
of every budget perturbed at the pooled residual scale, and the budgets
resampled (see :func:`_bootstrap`). Each budget is checked for the known sources
of bias of the method (Porian et al. 2024; Li et al. 2025, "(Mis)Fitting scaling
laws"): a parabola that does not describe its points, a sampled grid off-centre
or lopsided around the vertex, a parabola opening downward, a vertex outside
the sampled range.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError, NotFittedError
from scalekit.formatting import format_number, format_with_interval
from scalekit.isoflop._budgets import assign_budgets
from scalekit.isoflop._estimator import AllocationEstimator
from scalekit.isoflop._parabolas import Groups, fit_parabolas, group_scaling, vertices
from scalekit.isoflop._powerfit import fit_power_law
from scalekit.isoflop._windows import SMALLEST, check_window, choose_windows
from scalekit.results import frame_from_records

#: Budget checks, with the condition each one flags.
CHECKS = {
    "downward": "the parabola opens downward (no minimum); the budget is left out",
    "outside": "the vertex lies outside the sampled range (extrapolated)",
    "off_centre": "the vertex lies in the outer quarter of the sampled range on one side",
    "asymmetric": "fewer than a quarter of the budget's points lie on one side of the vertex",
}
#: Budgets with these flags do not enter the power-law fits.
EXCLUDED = ("downward",)
#: The variable a parabola may be fitted in (``profile``).
PROFILES = ("params", "tokens")


class IsoFLOPProfiles(AllocationEstimator):
    """IsoFLOP-profile estimate of the compute-optimal N*(C) and D*(C).

    Parameters
    ----------
    profile : {"params", "tokens"}
        Fit the parabola in log N or in log D.
    figures : int or None
        Significant figures to which budgets are rounded (when ``budgets`` is None);
        None (the default) finds the budgets as clusters of log-spaced compute when
        the compute clusters, else rounds to 2 (:func:`~scalekit.isoflop._budgets.assign_budgets`).
    budgets : sequence of float, optional
        The study's nominal budgets; each point joins the nearest within ``tolerance``.
    tolerance : float
        Decades of compute a point may lie from its nominal budget.
    window : "auto", "all" or int
        Which points of each budget the parabola describes (see
        :mod:`scalekit.isoflop._windows`): grown around the lowest loss while the
        parabola fits (``"auto"``), every point (``"all"``, Hoffmann et al.), or this
        many consecutive sizes centred on the lowest loss (at least 3).
    n_boot : int
        Bootstrap replicates (two-stage: losses perturbed within budgets, budgets
        resampled); 0 for none (the line's t interval then). A replicate's vertex
        farther than the sampled span beyond either end of the sampled range counts
        as no vertex (``boot_no_vertex`` is their fraction).
    ci_level : float
    convention : {"6ND", "counted"}
        FLOP convention (see :mod:`scalekit.isoflop._points`).
    flops_per_param_token : float
    seed : int

    Attributes
    ----------
    budgets_ : DataFrame
        One row per budget: ``n_sampled`` points and ``n_points`` of them used, sampled
        range, ``params_opt``/``tokens_opt`` with intervals, ``loss_opt``,
        ``curvature``, ``offset`` (vertex position in the sampled range, -1 … 1),
        ``misfit_p`` (lack-of-fit p-value of the parabola), ``flags``.
    budgeting_ : str
        How the points were grouped into budgets.
    assignment_ : BudgetAssignment
        The budget of every point read.
    windows_ : Windows
        The points chosen per budget and the pure error behind the choice.
    points_ : DataFrame
        The points the parabolas were fitted to.
    sampled_points_ : DataFrame
        Every point of the budgets kept, with ``used`` saying whether a parabola took it.
    params_law_, tokens_law_ : PowerLawFit
        ``N* = k_N·C^a`` and ``D* = k_D·C^b``.
    vertex_replicates_ : ndarray (n_boot, K)
        Bootstrap replicates of the log-vertex per budget.
    diagnostics_ : list of Diagnostic
        What a reader should know: budgets skipped, parabolas that do not describe their
        points, implausible exponents, points left out.
    warnings_ : list of str
        The messages of the diagnostics of severity warning or error.

    An estimator rebuilt by :meth:`from_dict` has what the report carries (the laws,
    ``budgets_``, ``budgeting_``, the diagnostics); the points, windows, assignment and
    bootstrap replicates stay with the fit that made them.
    """

    TITLE = "Approach 2 (IsoFLOP profiles): N*(C) = k_N·C^a, D*(C) = k_D·C^b"

    def __init__(self, *, profile: str = "params", figures: int | None = None, budgets=None,
                 tolerance: float = 0.1, window="auto", n_boot: int = 1000,
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

    def check_settings(self) -> None:
        """Reject settings outside their range (before any data is read)."""
        super().check_settings()
        check_choice("profile", self.profile, PROFILES)
        if self.figures is not None:
            check_number("figures", self.figures, low=1, high=15, integer=True)
        check_number("tolerance", self.tolerance, low=0, low_open=True)
        check_window(self.window)

    def fit(self, data, *, source: str | None = None) -> IsoFLOPProfiles:
        """Fit the profiles of ``data`` (tidy points: compute/params/tokens, loss)."""
        self.check_settings()
        points = self._points(data, source)
        assignment = assign_budgets(points["compute"].to_numpy(), figures=self.figures,
                                    nominal=self.budgets, tolerance=self.tolerance)
        points["budget"] = assignment.budget
        points = points[np.isfinite(points["budget"])].sort_values(["budget", self.profile])
        points, self.diagnostics_ = _usable_budgets(points, self.profile, source)
        x_all = np.log(points[self.profile].to_numpy())
        groups_all = Groups.from_sorted_codes(points["budget"].to_numpy())
        windows = choose_windows(x_all, points["loss"].to_numpy(), groups_all,
                                 window=self.window)
        centre, half = group_scaling(x_all, groups_all)  # of the sampled range
        n_sampled = groups_all.sizes
        used = windows.mask(x_all.size)
        sampled = points.assign(used=used).reset_index(drop=True)
        points = points[used]
        other = self._other_name
        x = np.log(points[self.profile].to_numpy())
        y = points["loss"].to_numpy()
        groups = Groups.from_sorted_codes(points["budget"].to_numpy())

        coef = fit_parabolas(x, y, groups)
        x_star, loss_star = vertices(coef, x, groups)
        offset = (x_star - centre) / half
        flags = _flag_budgets(coef, x_star, offset, x_all, groups_all)
        excluded = np.array([any(f in EXCLUDED for f in row) for row in flags])
        x_star = np.where(excluded, np.nan, x_star)
        if (~excluded).sum() < 3:
            raise InputError(f"{int((~excluded).sum())} budgets have an IsoFLOP parabola that "
                             "opens upward, but a power law through the vertices needs three",
                             source=source)
        rng = np.random.default_rng(self.seed)
        replicates, weights, noise = None, None, _noise_scale(x, y, groups, coef, windows)
        if self.n_boot and noise is not None:
            replicates, weights = _bootstrap(x, y, groups, noise, ~excluded, self.n_boot, rng)
            wild = np.abs(replicates - centre) > 3 * half
            replicates = np.where(wild | excluded[None, :], np.nan, replicates)
        budget = _budget_labels(points, groups, nominal=self.budgets is not None)

        # The other variable at the vertex: a line of log other on log x within each budget
        # (exact under C = k·N·D, close to it for counted FLOPs).
        log_other = np.log(points[other].to_numpy())
        slope, intercept = _lines_per_group(x, log_other, groups)
        other_star = intercept + slope * x_star
        other_reps = None if replicates is None else intercept + slope * replicates

        table = pd.DataFrame({"budget": budget, "n_sampled": n_sampled, "n_points": groups.sizes,
                              f"{self.profile}_min": np.exp(centre - half),
                              f"{self.profile}_max": np.exp(centre + half)})
        for name, log_opt, reps in ((self.profile, x_star, replicates),
                                    (other, other_star, other_reps)):
            _add_optimum_columns(table, name, log_opt, reps, ci_level=self.ci_level)
        if replicates is not None:
            table["boot_no_vertex"] = np.isnan(replicates).mean(axis=0)
        table["loss_opt"] = np.where(excluded, np.nan, loss_star)
        table["curvature"] = coef[:, 2] / group_scaling(x, groups)[1] ** 2  # per window
        table["offset"] = offset
        table["misfit_p"] = windows.misfit_p
        table["flags"] = [",".join(row) for row in flags]
        self.budgets_ = table.reset_index(drop=True)
        self.assignment_ = assignment
        self.budgeting_ = assignment.method
        self.windows_ = windows
        self.points_ = points.reset_index(drop=True)
        self.sampled_points_ = sampled
        self.vertex_replicates_ = replicates
        self._other_replicates = other_reps
        self._budget_weights = weights
        self.params_law_, self.tokens_law_ = self._power_laws(np.ones(budget.size, bool))
        self.compute_range_ = (float(budget[~excluded].min()), float(budget[~excluded].max()))
        if assignment.n_left_out:
            self.diagnostics_.append(Diagnostic(
                "outliers_dropped", "info",
                f"{assignment.n_left_out} points lie within {self.tolerance:g} decades of no "
                "nominal budget and were left out; widen `tolerance` or add their budgets to "
                "keep them", value=int(assignment.n_left_out)))
        self.diagnostics_ += self._budget_diagnostics(flags) + self._exponent_diagnostics()
        self.warnings_ = [d.message for d in self.diagnostics_ if d.severity != "info"]
        return self

    def refit_without(self, flag: str):
        """``(params_law, tokens_law)`` refitted without the budgets carrying ``flag``."""
        self._check_fitted()
        check_choice("flag", flag, tuple(CHECKS))
        if not hasattr(self, "vertex_replicates_"):
            raise NotFittedError("refit_without needs the vertices' bootstrap replicates, which "
                                 "a report does not carry; fit this IsoFLOPProfiles (rebuilt "
                                 "by from_dict) again")
        keep = ~self.budgets_["flags"].str.split(",").apply(lambda row: flag in row).to_numpy()
        if np.isfinite(self.budgets_["params_opt"].to_numpy()[keep]).sum() < 3:
            return None  # a line through fewer than three vertices has no residual
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
                                      weights=self._budget_weights, ci_level=self.ci_level))
        return tuple(laws)

    @property
    def _other_name(self) -> str:
        return "tokens" if self.profile == "params" else "params"

    def _budget_diagnostics(self, flags) -> list[Diagnostic]:
        out = []
        auto = self.window == "auto" and self.windows_.pure_dof > 0
        rows = self.budgets_.itertuples(index=False)
        for row, budget_flags, p in zip(rows, flags, self.windows_.misfit_p, strict=True):
            budget = float(row.budget)
            where = f"budget {budget:.3g} FLOPs"
            if "downward" in budget_flags:
                out.append(Diagnostic("budget_skipped", "warning",
                                      f"{where}: the parabola opens downward (no minimum), so the "
                                      "budget was left out; sample sizes on both sides of its "
                                      "lowest loss", budget=budget))
                continue
            if p < 0.05:
                out.append(Diagnostic(
                    "profile_misfit", "warning",
                    f"{where}: the parabola does not describe its {row.n_points} points "
                    f"(lack of fit p = {p:.2g} against the pure error); let the window be "
                    "chosen by fit quality (`window='auto'`) or fit fewer sizes",
                    budget=budget, value=float(p)))
            elif auto and row.n_points == SMALLEST and row.n_sampled > SMALLEST:
                out.append(Diagnostic(
                    "profile_misfit", "info",
                    f"{where}: a parabola describes only the {SMALLEST} sizes around the "
                    "lowest loss, so its vertex interpolates them; sample sizes more "
                    "densely near the minimum", budget=budget, value=SMALLEST))
            if "outside" in budget_flags:
                out.append(Diagnostic("profile_misfit", "warning",
                                      f"{where}: the vertex lies outside the sizes sampled "
                                      "(extrapolated); sample sizes beyond it", budget=budget,
                                      value=float(row.offset)))
            elif budget_flags:
                centre = getattr(row, f"{self.profile}_opt")
                out.append(Diagnostic("profile_misfit", "info",
                                      f"{where}: the sampled grid is lopsided around the vertex "
                                      f"(offset {row.offset:+.2f}); centre the next sweep on "
                                      f"{self.profile} ≈ {centre:.3g}",
                                      budget=budget, value=float(row.offset)))
        return out

    def to_dict(self) -> dict:
        """Per-approach body of the report: a, b, k_N, k_D with intervals, budgets, warnings."""
        self._check_fitted()
        return self._allocation_json(budgets=self.budgets_, budgeting=self.budgeting_,
                                     profile=self.profile)

    def _restore(self, data: dict) -> None:
        self.budgets_ = frame_from_records(data["budgets"])
        self.budgeting_ = data["budgeting"]

    def _fitted_sections(self) -> list:
        var = self.profile
        rows = [(format_number(row["budget"]),
                 f"{var}* {format_with_interval(row[f'{var}_opt'], _ci(row, var))}, "
                 f"loss* {format_number(row['loss_opt'])}, points {row['n_points']}/"
                 f"{row['n_sampled']}, flags {row['flags'] or '-'}")
                for _, row in self.budgets_.iterrows()]
        return [("Budgets", [("grouping", self.budgeting_), *rows])]


def _ci(row, name: str):
    """The interval of ``name``'s optimum in a budgets row (None without a bootstrap)."""
    return (row[f"{name}_lo"], row[f"{name}_hi"]) if f"{name}_lo" in row else None


def _usable_budgets(points: pd.DataFrame, profile: str, source: str | None):
    """Leave out budgets with fewer than three distinct sizes (a ``budget_skipped`` each)."""
    counts = points.groupby("budget")[profile].nunique()
    few = counts[counts < 3]
    diagnostics = [Diagnostic(
        "budget_skipped", "info",
        f"budget {budget:.3g} FLOPs has {n} distinct {profile} value{'s' if n != 1 else ''} "
        "and was left out, since a parabola needs three; give the study's nominal budgets "
        "(`budgets`) or round to fewer significant figures (`figures`) if its points were "
        "split from a neighbouring budget", budget=float(budget), value=int(n))
        for budget, n in few.items()]
    kept = counts.index[counts >= 3]
    if len(kept) < 3:
        raise InputError(f"IsoFLOP profiles need three budgets of three or more {profile} "
                         f"values each, but {len(kept)} of {len(counts)} have them: add runs, or "
                         "give the study's budgets as `budgets`", source=source,
                         column="compute")
    return points[points["budget"].isin(kept)], diagnostics


def _noise_scale(x, y, groups, coef, windows) -> tuple[float, int] | None:
    """Residual variance of the losses about the parabolas and its degrees of freedom.

    Pooled over the budgets' windows; the pure error where the windows leave no
    residual degree of freedom; ``None`` where neither exists.
    """
    centre, half = group_scaling(x, groups)
    u = (x - centre[groups.member]) / half[groups.member]
    c = coef[groups.member]
    fitted = c[:, 0] + c[:, 1] * u + c[:, 2] * u * u
    ok = np.isfinite(coef).all(axis=1)
    residual = np.where(ok[groups.member], y - fitted, 0.0)
    dof = int(np.sum(np.where(ok, groups.sizes - 3, 0)))
    if dof > 0:
        return float(residual @ residual / dof), dof
    if windows.pure_dof > 0 and windows.pure_error > 0:
        return windows.pure_error, windows.pure_dof
    return None


def _bootstrap(x, y, groups, noise, valid, n_boot: int, rng: np.random.Generator):
    """Vertex replicates (n_boot, K) and budget weights (n_boot, K) of the two-stage bootstrap.

    Within each budget the losses are perturbed by normal noise at the pooled residual
    scale (the scale itself drawn from its scaled chi-square distribution, so that a
    scale estimated from few degrees of freedom widens the interval as a t quantile
    would); across budgets, the budgets entering the power-law fit are resampled with
    replacement, so the scatter of the vertices about the line counts too.
    """
    variance, dof = noise
    scale = np.sqrt(variance * dof / rng.chisquare(dof, n_boot))
    replicas = y[None, :] + scale[:, None] * rng.standard_normal((n_boot, y.size))
    replicates = vertices(fit_parabolas(x, replicas, groups), x, groups)[0]
    weights = np.zeros((n_boot, groups.sizes.size))
    n_valid = int(valid.sum())
    weights[:, valid] = rng.multinomial(n_valid, np.full(n_valid, 1.0 / n_valid), size=n_boot)
    return replicates, weights


def _flag_budgets(coef, x_star, offset, x, groups) -> list[list[str]]:
    """The :data:`CHECKS` each budget fails, against all of its sampled points (``offset``:
    the vertex's position in the sampled range, -1 … 1)."""
    member = groups.member
    flags = []
    for k in range(groups.sizes.size):
        row = []
        if not coef[k, 2] > 0:
            flags.append(["downward"])
            continue
        if abs(offset[k]) > 1:
            row.append("outside")
        if abs(offset[k]) > 0.5:
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


def _budget_labels(points, groups, *, nominal: bool) -> np.ndarray:
    """Each budget's label: the nominal budget, or for rounded labels the geometric mean
    compute of its points."""
    if nominal:
        return points["budget"].to_numpy()[groups.starts]
    return np.exp(np.add.reduceat(np.log(points["compute"].to_numpy()), groups.starts)
                  / groups.sizes)


def _add_optimum_columns(table, name: str, log_opt, reps, *, ci_level: float) -> None:
    """``{name}_opt`` and, with bootstrap replicates, its interval ``{name}_lo/_hi``."""
    table[f"{name}_opt"] = np.exp(log_opt)
    if reps is None:
        return
    tails = [50 * (1 - ci_level), 50 * (1 + ci_level)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # budgets left out: all nan
        lo_ci, hi_ci = np.nanpercentile(reps, tails, axis=0)
    table[f"{name}_lo"], table[f"{name}_hi"] = np.exp(lo_ci), np.exp(hi_ci)
