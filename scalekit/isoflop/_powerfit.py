"""Power laws ``y = k·C^e`` through compute-optimal points, fitted by the shared engine.

The line is the ``power`` law ``y = A·x^-alpha`` (``k = A``, ``e = -alpha``)
fitted by :func:`scalekit.fit.fit_law` with the squared loss on log residuals —
ordinary least squares of ``log y`` on ``log C`` — and its result is a
:class:`~scalekit.fit.FitResult`. The interval comes from the lines of the
bootstrap replicates of the points (the same objective, whose minimiser is the
weighted least-squares line, computed for all replicates at once and stored as
the result's bootstrap parameter sets), or, without replicates, from the t
distribution of the least-squares line. Approach 3 derives its lines from the
Chinchilla law rather than fitting them (:func:`derived_power_law`), in the same
result type.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from scalekit.fit import FitResult
from scalekit.formatting import format_interval, format_number
from scalekit.results import ResultProtocol

#: The engine's law for a line in log-log space.
LAW = "power"


@dataclass(frozen=True, repr=False)
class PowerLawFit(ResultProtocol):
    """``y = coef · C^exponent`` with intervals at ``ci_level``.

    The intervals (``exponent_ci``, ``coef_ci``, :meth:`interval`) are plain percentiles
    of the replicates' lines: the replicates carry the uncertainty of the points
    themselves (for approach 2 the two-stage bootstrap of the vertices), so the
    expansion :meth:`FitResult.interval` applies to a resampling of a fit's own
    residuals does not apply to them.

    Attributes
    ----------
    fit : FitResult
        The ``power`` law ``y = A·C^-alpha`` (``coef = A``, ``exponent = -alpha``), its
        intervals and, when bootstrapped, the parameters of every replicate's line.
    t_line : tuple, optional
        Without replicates, what the t interval of the line needs: mean log C, the sum
        of squared deviations of log C, the number of points, and the t quantile times
        the residual standard deviation.
    exponent, coef, exponent_ci, coef_ci, ci_level, ci_method, n_points, log_residual_sd
        Read off ``fit``.
    """

    fit: FitResult
    t_line: tuple[float, float, int, float] | None = None

    @property
    def exponent(self) -> float:
        return -self.fit.values["alpha"]

    @property
    def coef(self) -> float:
        return self.fit.values["A"]

    @property
    def exponent_ci(self) -> tuple[float, float]:
        lo, hi = self.fit.ci["alpha"]
        return -hi, -lo

    @property
    def coef_ci(self) -> tuple[float, float]:
        return tuple(self.fit.ci["A"])

    @property
    def ci_level(self) -> float:
        return self.fit.ci_level

    @property
    def ci_method(self) -> str:
        return self.fit.stats["ci_method"]

    @property
    def n_points(self) -> int:
        return self.fit.stats["n_points"]

    @property
    def log_residual_sd(self) -> float:
        return self.fit.stats.get("residual_scale", float("nan"))

    @property
    def replicates(self) -> np.ndarray | None:
        """(R, 2): log coef and exponent of every replicate's line (None without)."""
        boot = self.fit.bootstrap_values
        return None if boot is None else np.column_stack([np.log(boot[:, 0]), -boot[:, 1]])

    def predict(self, compute) -> np.ndarray:
        """``coef · C^exponent``."""
        compute = np.asarray(compute, dtype=float)
        return self.fit.predict({"x": np.atleast_1d(compute)}).reshape(compute.shape)

    def interval(self, compute) -> tuple[np.ndarray, np.ndarray]:
        """Confidence interval of the fitted line at ``compute``.

        Percentiles over the bootstrap replicates' lines; without them the t interval
        of the least-squares line in log space (``nan`` where there is neither).
        """
        log_c = np.log(np.atleast_1d(np.asarray(compute, dtype=float)))
        lines = self.replicates
        if lines is not None:  # plain percentiles, as for the exponent: the replicates are the
            # bootstrap of the vertices, not residual resamples of the line that
            # FitResult.interval would widen
            curves = lines[:, :1] + lines[:, 1:] * log_c[None, :]
            tails = [50 * (1 - self.ci_level), 50 * (1 + self.ci_level)]
            lo, hi = np.nanpercentile(curves, tails, axis=0)
            return np.exp(lo), np.exp(hi)
        if self.t_line is None:
            return np.full(log_c.shape, np.nan), np.full(log_c.shape, np.nan)
        mean, sxx, n, t_sd = self.t_line
        centre = np.log(self.coef) + self.exponent * log_c
        half = t_sd * np.sqrt(1.0 / n + (log_c - mean) ** 2 / sxx)
        return np.exp(centre - half), np.exp(centre + half)

    def to_dict(self) -> dict:
        """The line and its result, plain JSON (inverse of :meth:`from_dict`)."""
        return {"exponent": self.exponent, "exponent_ci": list(self.exponent_ci),
                "coef": self.coef, "coef_ci": list(self.coef_ci), "ci_level": self.ci_level,
                "ci_method": self.ci_method, "n_points": self.n_points,
                "log_residual_sd": self.log_residual_sd, "fit": self.fit.to_dict(),
                "t_line": None if self.t_line is None else list(self.t_line)}

    @classmethod
    def from_dict(cls, data: dict) -> PowerLawFit:
        t_line = data.get("t_line")
        return cls(FitResult.from_dict(data["fit"]),
                   None if t_line is None else (float(t_line[0]), float(t_line[1]),
                                                int(t_line[2]), float(t_line[3])))

    def _summary_title(self) -> str:
        return "Power law y = coef·C^exponent"

    def _summary_sections(self):
        level = f"{self.ci_level:.0%}"
        return [("Line", [("exponent", f"{format_number(self.exponent)}  {level} CI "
                                       f"{format_interval(self.exponent_ci)}"),
                          ("coef", f"{format_number(self.coef)}  {level} CI "
                                   f"{format_interval(self.coef_ci)}")]),
                ("Fit statistics", [("n_points", self.n_points),
                                    ("ci_method", self.ci_method),
                                    ("log_residual_sd", self.log_residual_sd)])]

    def _repr_fields(self) -> dict:
        return {"exponent": self.exponent, "coef": self.coef, "n_points": self.n_points}


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
    """Fit ``values = coef · compute^exponent`` with the shared engine.

    Parameters
    ----------
    compute, values : array (K,)
        Budgets and their optimal N (or D); non-finite values are left out. At least
        three must remain (the engine needs more points than the line's two parameters).
    replicates : array (R, K), optional
        Bootstrap replicates of ``values`` (``nan`` where a replicate has none).
    weights : array (R, K), optional
        Weight of each point in each replicate's line (how often a resample drew it);
        1 by default.
    ci_level : float
        Level of the intervals.
    """
    from scalekit.fit import fit_law

    compute = np.asarray(compute, dtype=float)
    log_c = np.log(compute)
    log_y = np.log(np.asarray(values, dtype=float))
    keep = np.isfinite(log_y)
    result = fit_law(LAW, {"x": compute[keep]}, np.exp(log_y[keep]), loss="squared",
                     ci_level=ci_level)
    lines = None
    if replicates is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            log_rep = np.log(np.asarray(replicates, dtype=float))
        lines = weighted_lines(log_c[None, :], log_rep,
                               np.ones_like(log_rep) if weights is None else weights)
        lines = lines[np.isfinite(lines).all(axis=1)]
    if lines is not None and len(lines):
        return _with_replicates(result, lines)
    n = int(keep.sum())
    intercept, slope = np.log(result.values["A"]), -result.values["alpha"]
    residual = log_y[keep] - (intercept + slope * log_c[keep])
    sd = float(np.sqrt(residual @ residual / (n - 2)))
    dc = log_c[keep] - log_c[keep].mean()
    t = stats.t.ppf(0.5 + ci_level / 2, n - 2)
    half_slope = t * sd / np.sqrt(dc @ dc)
    half_intercept = t * sd * np.sqrt(1 / n + log_c[keep].mean() ** 2 / (dc @ dc))
    t_line = (float(log_c[keep].mean()), float(dc @ dc), n, float(t * sd))
    ci = {"A": (float(np.exp(intercept - half_intercept)),
                float(np.exp(intercept + half_intercept))),
          "alpha": (float(-slope - half_slope), float(-slope + half_slope))}
    stats_ = {**result.stats, "ci_method": "t interval", "residual_scale": sd}
    return PowerLawFit(replace(result, ci=ci, stats=stats_), t_line)


def derived_power_law(line, replicates, *, ci_level: float, n_points: int,
                      source: str) -> PowerLawFit:
    """A line ``(log coef, exponent)`` derived from another fit, in the same result type.

    ``replicates`` (R, 2) are the lines of that fit's bootstrap parameter sets (or None);
    ``source`` names the fit, for the result's statistics.
    """
    from scalekit.laws import get_law

    stats_ = {"n_points": n_points, "n_params": 2, "derived_from": source,
              "residual_scale": float("nan"), "bootstrap": 0, "ci_method": "none (no bootstrap)"}
    nan = (float("nan"), float("nan"))
    result = FitResult(law=get_law(LAW), values={"A": float(np.exp(line[0])),
                                                 "alpha": float(-line[1])},
                       stderr={"A": float("nan"), "alpha": float("nan")},
                       ci={"A": nan, "alpha": nan}, ci_level=ci_level, stats=stats_)
    if replicates is not None:
        replicates = replicates[np.isfinite(replicates).all(axis=1)]
    if replicates is None or not len(replicates):
        return PowerLawFit(result)
    return _with_replicates(result, replicates)


def _with_replicates(result: FitResult, lines: np.ndarray) -> PowerLawFit:
    """``result`` with the replicates' lines as its bootstrap parameter sets and intervals."""
    tails = [50 * (1 - result.ci_level), 50 * (1 + result.ci_level)]
    (i_lo, i_hi), (s_lo, s_hi) = np.percentile(lines, tails, axis=0).T
    ci = {"A": (float(np.exp(i_lo)), float(np.exp(i_hi))), "alpha": (float(-s_hi), float(-s_lo))}
    boot = np.column_stack([np.exp(lines[:, 0]), -lines[:, 1]])
    stats_ = {**result.stats, "ci_method": "bootstrap percentile", "bootstrap": int(len(lines))}
    return PowerLawFit(replace(result, ci=ci, stats=stats_, bootstrap_values=boot))


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
