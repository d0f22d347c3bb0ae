"""Approach 3: the parametric law ``L(N, D) = E + A/N^alpha + B/D^beta``.

Fitted by the foundation's engine (:func:`scalekit.fit.fit_law`); minimising it
under ``C = k·N·D`` gives ``N* = G (C/k)^a`` and ``D* = G^-1 (C/k)^b`` with
``a = beta/(alpha+beta)``, ``b = alpha/(alpha+beta)``,
``G = (alpha A / (beta B))^(1/(alpha+beta))`` (Hoffmann et al. 2022, §3.3 and
Appendix D), so ``k_N = G·k^-a`` and ``k_D = k^-b / G``. Intervals come from the
engine's bootstrap parameter sets.
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.errors import InputError
from scalekit.fit import FitResult
from scalekit.isoflop._estimator import AllocationEstimator
from scalekit.isoflop._powerfit import derived_power_law
from scalekit.laws import optimum_coefficients


def allocation_lines(values: np.ndarray,
                     flops_per_param_token: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log k_N, a)`` and ``(log k_D, b)`` for Chinchilla parameter rows (..., 5).

    Rows are ``E, A, B, alpha, beta`` in natural units.
    """
    values = np.asarray(values, dtype=float)
    A, B, alpha, beta = values[..., 1], values[..., 2], values[..., 3], values[..., 4]
    with np.errstate(divide="ignore", invalid="ignore"):  # a bound (B = 0) gives inf, no error
        a, b = beta / (alpha + beta), alpha / (alpha + beta)
        log_g = (np.log(alpha) + np.log(A) - np.log(beta) - np.log(B)) / (alpha + beta)
    log_k = np.log(flops_per_param_token)
    return np.stack([log_g - a * log_k, a], -1), np.stack([-b * log_k - log_g, b], -1)


class ParametricOptimum(AllocationEstimator):
    """Approach-3 estimate of N*(C), D*(C) through a fitted Chinchilla law.

    Parameters
    ----------
    loss : {"huber", "squared"}
        Objective of the fit engine (Huber on log residuals by default).
    delta : float
        Huber delta.
    n_boot : int
        Bootstrap resamples of the points, each a full multi-start fit.
    starts : array (S, 5), optional
        Start grid in the fitting space (log E, log A, log B, alpha, beta); the law's
        own grid (Hoffmann et al.'s 4,500 starts) by default.
    ci_level : float
    convention : {"6ND", "counted"}
    flops_per_param_token : float
    seed : int
    drop_top : int
        Drop the ``drop_top`` points of highest loss first (as ``fit_frame`` does; Besiroglu
        et al. 2024 drop Chinchilla's five).

    Attributes
    ----------
    result_ : FitResult
        The engine's fit of the Chinchilla law.
    params_law_, tokens_law_ : PowerLawFit
        ``N* = k_N·C^a`` and ``D* = k_D·C^b`` implied by the law.
    G_ : float
    warnings_ : list of str
    diagnostics_ : list of Diagnostic
    """

    TITLE = "Approach 3 (parametric law): N*(C) = k_N·C^a, D*(C) = k_D·C^b"

    def __init__(self, *, loss: str = "huber", delta: float = 1e-3, n_boot: int = 200,
                 starts=None, ci_level: float = 0.95, convention: str = "6ND",
                 flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN, seed: int = 0,
                 drop_top: int = 0) -> None:
        self.loss = loss
        self.drop_top = drop_top
        self.delta = delta
        self.n_boot = n_boot
        self.starts = starts
        self.ci_level = ci_level
        self.convention = convention
        self.flops_per_param_token = flops_per_param_token
        self.seed = seed

    def settings(self) -> dict:
        return {"loss": self.loss, "delta": self.delta, "n_boot": self.n_boot,
                "starts": None if self.starts is None else np.asarray(self.starts).tolist(),
                "ci_level": self.ci_level, "convention": self.convention,
                "flops_per_param_token": self.flops_per_param_token, "seed": self.seed,
                "drop_top": self.drop_top}

    def fit(self, data, *, source: str | None = None) -> ParametricOptimum:
        """Fit the Chinchilla law to ``data`` (points with params, tokens and loss)."""
        from scalekit.fit import fit_law
        from scalekit.laws import get_law

        self.check_settings()
        points = self._points(data, source)
        drop = int(check_number("drop_top", self.drop_top, low=0, integer=True))
        if drop:
            if drop >= len(points):
                raise InputError(f"The value of `drop_top` is {drop}, but must be below the "
                                 f"{len(points)} points", source=source)
            points = points.drop(points["loss"].nlargest(drop).index)
        law = get_law("chinchilla")
        _check_design(points, len(law.params), source)
        X = {"params": points["params"].to_numpy(), "tokens": points["tokens"].to_numpy()}
        self.result_ = fit_law(law, X, points["loss"].to_numpy(), loss=self.loss,
                               delta=self.delta, starts=self.starts, bootstrap=self.n_boot,
                               ci_level=self.ci_level, seed=self.seed)
        theta = np.array([self.result_.values[name] for name in law.param_names])
        boot = self.result_.bootstrap_values
        k = self.flops_per_param_token
        lines = allocation_lines(theta, k)
        reps = allocation_lines(boot, k) if boot is not None and len(boot) else (None, None)
        self.params_law_, self.tokens_law_ = (
            derived_power_law(line, rep, ci_level=self.ci_level, n_points=points.shape[0],
                              source="chinchilla law (approach 3)")
            for line, rep in zip(lines, reps, strict=True))
        self.G_ = optimum_coefficients(self.result_.values)["G"]
        self.compute_range_ = (float(points["compute"].min()), float(points["compute"].max()))
        self.warnings_ = list(self.result_.warnings)
        self.diagnostics_ = self._exponent_diagnostics()
        return self

    def to_dict(self) -> dict:
        """a, b, k_N, k_D with intervals, G, the law's fit, settings, warnings (see
        :meth:`from_dict`)."""
        self._check_fitted()
        return self._allocation_json(G=self.G_, law=self.result_.to_dict())

    def _restore(self, data: dict) -> None:
        self.result_ = FitResult.from_dict(data["law"])
        self.G_ = float(data["G"])

    def _fitted_sections(self) -> list:
        values = self.result_.values
        return [("Law", [*((name, values[name]) for name in values), ("G", self.G_),
                         ("objective", self.result_.stats.get("objective")),
                         ("n_points", self.result_.stats.get("n_points"))])]


def _check_design(points, n_params: int, source) -> None:
    """Refuse points that cannot determine the law: N and D must both vary, over more
    distinct (N, D) pairs than the law has parameters."""
    pairs = points[["params", "tokens"]].drop_duplicates()
    varying = [name for name in ("params", "tokens") if points[name].nunique() > 1]
    if len(varying) < 2 or len(pairs) <= n_params:
        raise InputError(f"the parametric law needs points whose params and tokens both vary, "
                         f"over more than {n_params} distinct (params, tokens) pairs; the data "
                         f"have {len(pairs)} distinct pair{'s' if len(pairs) != 1 else ''}",
                         source=source)
