"""Approach 1: the envelope of learning curves (Hoffmann et al. 2022, §3.1).

At log-spaced compute values take, over all runs, the lowest loss reached at
that compute (each run's curve interpolated linearly in log compute); the run
that reaches it gives N*(C) and its token count at C gives D*(C). Compute
values where the best run is the smallest or largest run covering them are
left out: there the optimum may lie beyond the sizes trained. Intervals come
from resampling whole runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.errors import InputError
from scalekit.formatting import format_interval
from scalekit.isoflop._estimator import AllocationEstimator
from scalekit.isoflop._powerfit import fit_power_law
from scalekit.progress import track
from scalekit.results import frame_from_records


class Envelope(AllocationEstimator):
    """Envelope estimate of the compute-optimal N*(C) and D*(C).

    Parameters
    ----------
    n_grid : int
        Log-spaced compute values between the least and most compute logged.
    n_boot : int
        Bootstrap resamples of whole runs; 0 for none.
    ci_level : float
    convention : {"6ND", "counted"}
    flops_per_param_token : float
    seed : int

    Attributes
    ----------
    frontier_ : DataFrame
        Per compute value: ``loss`` (lowest), ``run``, ``params``, ``tokens``, ``used``.
    params_law_, tokens_law_ : PowerLawFit
    warnings_ : list of str
    diagnostics_ : list of Diagnostic
    """

    TITLE = "Approach 1 (envelope of learning curves): N*(C) = k_N·C^a, D*(C) = k_D·C^b"

    def __init__(self, *, n_grid: int = 200, n_boot: int = 1000, ci_level: float = 0.95,
                 convention: str = "6ND", flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN,
                 seed: int = 0) -> None:
        self.n_grid = n_grid
        self.n_boot = n_boot
        self.ci_level = ci_level
        self.convention = convention
        self.flops_per_param_token = flops_per_param_token
        self.seed = seed

    def settings(self) -> dict:
        return {"n_grid": self.n_grid, "n_boot": self.n_boot, "ci_level": self.ci_level,
                "convention": self.convention,
                "flops_per_param_token": self.flops_per_param_token, "seed": self.seed}

    def check_settings(self) -> None:
        """Reject settings outside their range (before any data is read)."""
        super().check_settings()
        check_number("n_grid", self.n_grid, low=3, integer=True)

    def fit(self, data, *, source: str | None = None) -> Envelope:
        """Fit the envelope of ``data`` (tidy learning curves with ``run``)."""
        self.check_settings()
        points = self._points(data, source)
        if "run" not in points:
            raise InputError("approach 1 needs learning curves: a run column", source=source)
        curves = _curves(points, source)
        runs = curves["runs"]
        grid = np.exp(np.linspace(curves["log_c"].min(), curves["log_c"].max(), self.n_grid))
        loss = _interpolate(curves, np.log(grid), "loss")            # (R, G)
        log_tokens = _interpolate(curves, np.log(grid), "log_tokens")
        params = curves["params"]

        best, used = _envelope(loss, params, np.ones(len(runs), bool))
        cols = np.arange(grid.size)
        frame = pd.DataFrame({"compute": grid, "loss": loss[best, cols], "run": runs[best],
                              "params": params[best], "tokens": np.exp(log_tokens[best, cols]),
                              "used": used})
        n_used = int(used.sum())
        if n_used < 3:
            raise InputError("the envelope has fewer than three compute values where the best "
                             "run is not the smallest or largest one trained; approach 1 cannot "
                             "fit N*(C)", source=source)
        reps = {"params": None, "tokens": None}
        if self.n_boot:
            rng = np.random.default_rng(self.seed)
            n_reps, t_reps = [], []
            for _ in track(range(self.n_boot), "approach 1 bootstrap"):
                chosen = np.zeros(len(runs), bool)
                chosen[rng.integers(0, len(runs), len(runs))] = True
                b, u = _envelope(loss, params, chosen)
                n_reps.append(np.where(u, params[b], np.nan))
                t_reps.append(np.where(u, np.exp(log_tokens[b, cols]), np.nan))
            reps = {"params": np.array(n_reps), "tokens": np.array(t_reps)}
        self.frontier_ = frame
        self.params_law_, self.tokens_law_ = (
            fit_power_law(grid, np.where(used, frame[name], np.nan), replicates=reps[name],
                          ci_level=self.ci_level) for name in ("params", "tokens"))
        self.compute_range_ = (float(grid[used].min()), float(grid[used].max()))
        self.warnings_ = []
        if n_used < grid.size:
            self.warnings_.append(
                f"at {grid.size - n_used} of {grid.size} compute values the best run is the "
                "smallest or largest covering it (the optimum may lie beyond the sizes trained); "
                "those values were left out")
        if np.unique(frame.loc[used, "params"]).size < 3:
            self.warnings_.append("the envelope passes through fewer than three model sizes; "
                                  "N*(C) is poorly determined")
        self.diagnostics_ = self._exponent_diagnostics()
        return self

    def to_dict(self) -> dict:
        """a, b, k_N, k_D with intervals, the frontier, settings, warnings (see
        :meth:`from_dict`)."""
        self._check_fitted()
        return self._allocation_json(n_compute_values=int(self.frontier_["used"].sum()),
                                     frontier=self.frontier_.to_dict(orient="records"))

    def _restore(self, data: dict) -> None:
        self.frontier_ = frame_from_records(data["frontier"])

    def _fitted_sections(self) -> list:
        used = self.frontier_[self.frontier_["used"]]
        return [("Envelope", [("compute values used", f"{len(used)} of {len(self.frontier_)}"),
                              ("runs on the envelope", int(used["run"].nunique())),
                              ("model sizes", format_interval((used["params"].min(),
                                                               used["params"].max())))])]


def _curves(points: pd.DataFrame, source) -> dict:
    points = points.sort_values(["run", "compute"])
    sizes = points.groupby("run", sort=True).size()
    if (sizes < 2).all():
        raise InputError("approach 1 needs learning curves (several points per run); every run "
                         "has one point", source=source)
    points = points[points["run"].map(sizes) >= 2]
    runs = np.array(sorted(points["run"].unique()))
    by_run = [g for _, g in points.groupby("run", sort=True)]
    return {"runs": runs,
            "params": np.array([g["params"].iloc[0] for g in by_run]),
            "log_c": np.concatenate([np.log(g["compute"].to_numpy()) for g in by_run]),
            "per_run": [(np.log(g["compute"].to_numpy()), g["loss"].to_numpy(),
                         np.log(g["tokens"].to_numpy())) for g in by_run]}


def _interpolate(curves: dict, log_grid: np.ndarray, what: str) -> np.ndarray:
    column = {"loss": 1, "log_tokens": 2}[what]
    out = np.full((len(curves["per_run"]), log_grid.size), np.nan)
    for i, run in enumerate(curves["per_run"]):
        log_c, values = run[0], run[column]
        inside = (log_grid >= log_c[0]) & (log_grid <= log_c[-1])
        out[i, inside] = np.interp(log_grid[inside], log_c, values)
    return out


def _envelope(loss: np.ndarray, params: np.ndarray, chosen: np.ndarray):
    """Best run per compute value among ``chosen`` runs, and whether it is interior."""
    masked = np.where(chosen[:, None] & np.isfinite(loss), loss, np.inf)
    best = masked.argmin(axis=0)
    covered = np.isfinite(masked)
    size = np.where(covered, params[:, None], np.nan)
    with np.errstate(invalid="ignore"):
        smallest = np.nanmin(np.where(covered, size, np.inf), axis=0)
        largest = np.nanmax(np.where(covered, size, -np.inf), axis=0)
    best_size = params[best]
    interior = np.isfinite(masked[best, np.arange(best.size)]) & (best_size > smallest) & (
        best_size < largest)
    return best, interior
