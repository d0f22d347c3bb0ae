"""Power laws ``y = k·C^e`` through compute-optimal points, in log-log space.

The point estimate is ordinary least squares of ``log y`` on ``log C``; the
interval comes from refitting every bootstrap replicate of the points (one
vectorised weighted regression for all replicates), or, without replicates,
from the t distribution of the least-squares slope.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PowerLawFit:
    """``y = coef · C^exponent`` with intervals at ``ci_level``.

    Attributes
    ----------
    exponent, coef : float
        The fitted exponent (``a`` or ``b``) and coefficient (``k_N`` or ``k_D``).
    exponent_ci, coef_ci : tuple of float
        Their intervals.
    ci_level : float
    ci_method : str
        ``"bootstrap percentile"`` or ``"t interval"``.
    n_points : int
    log_residual_sd : float
        Residual standard deviation of ``log y``.
    """

    exponent: float
    coef: float
    exponent_ci: tuple[float, float]
    coef_ci: tuple[float, float]
    ci_level: float
    ci_method: str
    n_points: int
    log_residual_sd: float
    replicates: np.ndarray | None = field(default=None, repr=False)  # (R, 2): log coef, exponent
    #: Without replicates, what the t interval of the line needs: mean log C, the sum of
    #: squared deviations of log C, the number of points, and t quantile times ``sd``.
    t_line: tuple[float, float, int, float] | None = field(default=None, repr=False)

    def predict(self, compute) -> np.ndarray:
        """``coef · C^exponent``."""
        return self.coef * np.asarray(compute, dtype=float) ** self.exponent

    def interval(self, compute) -> tuple[np.ndarray, np.ndarray]:
        """Confidence interval of the fitted line at ``compute``.

        Percentiles over the bootstrap replicates; without them the t interval of the
        least-squares line in log space (``nan`` where there is neither).
        """
        log_c = np.log(np.atleast_1d(np.asarray(compute, dtype=float)))
        if self.replicates is None:
            if self.t_line is None:
                return np.full(log_c.shape, np.nan), np.full(log_c.shape, np.nan)
            mean, sxx, n, t_sd = self.t_line
            centre = np.log(self.coef) + self.exponent * log_c
            half = t_sd * np.sqrt(1.0 / n + (log_c - mean) ** 2 / sxx)
            return np.exp(centre - half), np.exp(centre + half)
        curves = self.replicates[:, :1] + self.replicates[:, 1:] * log_c[None, :]
        tails = [50 * (1 - self.ci_level), 50 * (1 + self.ci_level)]
        lo, hi = np.nanpercentile(curves, tails, axis=0)
        return np.exp(lo), np.exp(hi)

    def to_json(self) -> dict:
        return {"exponent": self.exponent, "exponent_ci": list(self.exponent_ci),
                "coef": self.coef, "coef_ci": list(self.coef_ci), "ci_level": self.ci_level,
                "ci_method": self.ci_method, "n_points": self.n_points,
                "log_residual_sd": self.log_residual_sd}


def weighted_lines(log_c: np.ndarray, log_y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least-squares lines of ``log_y`` on ``log_c``, one per row.

    ``log_c``, ``log_y`` and ``weights`` broadcast to shape (R, K); entries with
    zero weight or non-finite ``log_y`` are ignored. Returns (R, 2): intercept
    and slope (``nan`` where a row has fewer than two distinct points).
    """
    log_c, log_y, weights = np.broadcast_arrays(log_c, log_y, weights)
    w = np.where(np.isfinite(log_y), weights, 0.0)
    y = np.where(w > 0, log_y, 0.0)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_c = (w * log_c).sum(axis=1) / total
        mean_y = (w * y).sum(axis=1) / total
        dc = log_c - mean_c[:, None]
        sxx = (w * dc ** 2).sum(axis=1)
        slope = (w * dc * (y - mean_y[:, None])).sum(axis=1) / sxx
        slope = np.where(sxx > 1e-12 * np.maximum(total, 1), slope, np.nan)
    return np.stack([mean_y - slope * mean_c, slope], axis=1)


def fit_power_law(compute, values, *, replicates=None, weights=None,
                  ci_level: float = 0.95) -> PowerLawFit:
    """Fit ``values = coef · compute^exponent``.

    Parameters
    ----------
    compute, values : array (K,)
        Budgets and their optimal N (or D); non-finite values are left out.
    replicates : array (R, K), optional
        Bootstrap replicates of ``values`` (``nan`` where a replicate has none).
    weights : array (R, K), optional
        Weight of each point in each replicate's line (how often a resample drew it);
        1 by default.
    ci_level : float
        Level of the intervals.
    """
    log_c = np.log(np.asarray(compute, dtype=float))
    log_y = np.log(np.asarray(values, dtype=float))
    keep = np.isfinite(log_y)
    line = weighted_lines(log_c[None, :], log_y[None, :], keep[None, :].astype(float))[0]
    n = int(keep.sum())
    residual = log_y[keep] - (line[0] + line[1] * log_c[keep])
    dof = max(n - 2, 1)
    sd = float(np.sqrt(residual @ residual / dof)) if n > 2 else float("nan")
    tails = [50 * (1 - ci_level), 50 * (1 + ci_level)]
    lines, t_line = None, None
    if replicates is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            log_rep = np.log(np.asarray(replicates, dtype=float))
        lines = weighted_lines(log_c[None, :], log_rep,
                               np.ones_like(log_rep) if weights is None else weights)
        lines = lines[np.isfinite(lines).all(axis=1)]
    if lines is not None and len(lines):
        slope_ci = tuple(np.percentile(lines[:, 1], tails))
        intercept_ci = tuple(np.percentile(lines[:, 0], tails))
        method = "bootstrap percentile"
    else:
        dc = log_c[keep] - log_c[keep].mean()
        se_slope = sd / np.sqrt(dc @ dc) if n > 2 else float("nan")
        se_intercept = sd * np.sqrt(1 / n + log_c[keep].mean() ** 2 / (dc @ dc)) if n > 2 \
            else float("nan")
        t = stats.t.ppf(0.5 + ci_level / 2, dof)
        slope_ci = (line[1] - t * se_slope, line[1] + t * se_slope)
        intercept_ci = (line[0] - t * se_intercept, line[0] + t * se_intercept)
        method, lines = "t interval", None
        t_line = (float(log_c[keep].mean()), float(dc @ dc), n, float(t * sd)) if n > 2 else None
    return PowerLawFit(exponent=float(line[1]), coef=float(np.exp(line[0])),
                       exponent_ci=(float(slope_ci[0]), float(slope_ci[1])),
                       coef_ci=(float(np.exp(intercept_ci[0])), float(np.exp(intercept_ci[1]))),
                       ci_level=ci_level, ci_method=method, n_points=n, log_residual_sd=sd,
                       replicates=lines, t_line=t_line)


def allocation_json(params_law, tokens_law, *, warnings, budgets=None, extra=None) -> dict:
    """JSON of one approach: a, b, k_N, k_D with intervals, optional budgets, warnings."""
    body = {"a": {"value": params_law.exponent, "ci": list(params_law.exponent_ci)},
            "b": {"value": tokens_law.exponent, "ci": list(tokens_law.exponent_ci)},
            "k_N": {"value": params_law.coef, "ci": list(params_law.coef_ci)},
            "k_D": {"value": tokens_law.coef, "ci": list(tokens_law.coef_ci)},
            "ci_level": params_law.ci_level, "ci_method": params_law.ci_method,
            **(extra or {})}
    if budgets is not None:
        body["budgets"] = budgets.to_dict(orient="records")
    body["warnings"] = list(warnings)
    return body
