"""Compute-optimal N and D when unique data are limited (Muennighoff et al. 2023, §5).

With the data-constrained law ``L(N, D, U)`` (:mod:`scalekit.laws._data_constrained`)
and a budget ``C = k N D``, the optimum is the N minimising ``L(N, C / (k N), U)``;
its epochs are ``D* / U``. Against unlimited data (``U`` infinite, the same law
without repetition) the plan loses ``L_U(C) - L_inf(C)``. A given run (N, D) spends
``k N D``; the least compute whose data-constrained optimum reaches the same loss says
how much of it is wasted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.formatting import format_interval, format_number
from scalekit.laws import get_law
from scalekit.results import FlatResult

#: Unique tokens standing for "unlimited data".
UNLIMITED = np.inf


@dataclass(repr=False)
class DataConstrainedPlan(FlatResult):
    """The compute-optimal run under a data limit, and what the limit costs.

    Attributes
    ----------
    compute, unique_tokens : float
        The budget C (FLOPs) and the unique tokens U.
    params, tokens, epochs, loss : float
        N*, D* = C / (k N*), D* / U and the predicted loss there.
    unlimited_params, unlimited_tokens, unlimited_loss : float
        The optimum with unlimited unique data.
    loss_lost : float
        ``loss - unlimited_loss``: what the data limit costs at this budget.
    flops_per_param_token : float
    compare_params, compare_tokens, compare_loss, compare_optimal_compute, wasted_compute,
    wasted_percent : float or None
        A given run (N, D) at the same U: its loss, the least compute whose optimum
        reaches it, and the compute it spends beyond that (FLOPs and % of its own).
    params_ci, tokens_ci, epochs_ci, loss_lost_ci : tuple or None
        Percentile intervals over the law's bootstrap draws (when given).
    ci_level : float or None
    """

    compute: float
    unique_tokens: float
    params: float
    tokens: float
    epochs: float
    loss: float
    unlimited_params: float
    unlimited_tokens: float
    unlimited_loss: float
    loss_lost: float
    flops_per_param_token: float
    compare_params: float | None = None
    compare_tokens: float | None = None
    compare_loss: float | None = None
    compare_optimal_compute: float | None = None
    wasted_compute: float | None = None
    wasted_percent: float | None = None
    params_ci: tuple[float, float] | None = None
    tokens_ci: tuple[float, float] | None = None
    epochs_ci: tuple[float, float] | None = None
    loss_lost_ci: tuple[float, float] | None = None
    ci_level: float | None = None

    def _summary_title(self) -> str:
        return (f"Compute-optimal run for C = {format_number(self.compute)} FLOPs with "
                f"U = {format_number(self.unique_tokens)} unique tokens")

    def _summary_sections(self):
        compare = [] if self.compare_params is None else [
            ("N, D", f"{format_number(self.compare_params)}, {format_number(self.compare_tokens)}"),
            ("loss", self.compare_loss),
            ("least compute reaching it", self.compare_optimal_compute),
            ("compute wasted", self.wasted_compute), ("wasted (%)", self.wasted_percent)]
        intervals = [] if self.ci_level is None else [
            (f"{name} ({self.ci_level:.0%})", format_interval(pair)) for name, pair in (
                ("params N*", self.params_ci), ("tokens D*", self.tokens_ci),
                ("epochs", self.epochs_ci), ("loss lost", self.loss_lost_ci))]
        return [("Optimum", [("params N*", self.params), ("tokens D*", self.tokens),
                             ("epochs", self.epochs), ("loss", self.loss)]),
                ("Intervals", intervals),
                ("Unlimited data", [("params", self.unlimited_params),
                                    ("tokens", self.unlimited_tokens),
                                    ("loss", self.unlimited_loss),
                                    ("loss lost to the data limit", self.loss_lost)]),
                ("Your run", compare)]

    def _repr_fields(self) -> dict:
        return {"compute": self.compute, "unique_tokens": self.unique_tokens,
                "params": self.params, "epochs": self.epochs, "loss_lost": self.loss_lost}


def _loss(values, params, tokens, unique):
    law = get_law("data_constrained")
    X = {"params": np.atleast_1d(np.asarray(params, float)),
         "tokens": np.atleast_1d(np.asarray(tokens, float)),
         "unique_tokens": np.broadcast_to(float(unique), np.shape(np.atleast_1d(params)))}
    return law.predict(X, values)


def optimum(values: Mapping[str, float], compute: float, unique_tokens: float, *,
            k: float = FLOPS_PER_PARAM_TOKEN) -> tuple[float, float, float]:
    """``(N*, D*, L*)`` minimising the law at ``compute`` under ``unique_tokens``.

    A grid over log N from 1 to C/k finds the basin, a bounded Brent search polishes it.
    """
    budget = compute / k
    log_n = np.linspace(0.0, np.log(budget), 2001)
    with np.errstate(all="ignore"):
        losses = _loss(values, np.exp(log_n), budget / np.exp(log_n), unique_tokens)
    best = int(np.nanargmin(losses))
    lo, hi = log_n[max(best - 1, 0)], log_n[min(best + 1, len(log_n) - 1)]
    found = minimize_scalar(
        lambda u: float(_loss(values, np.exp(u), budget / np.exp(u), unique_tokens)[0]),
        bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    n = float(np.exp(found.x))
    return n, budget / n, float(found.fun)


def _least_compute(values, loss: float, spent: float, unique_tokens: float, k: float) -> float:
    """The least compute whose optimum at ``unique_tokens`` reaches ``loss`` (at most
    ``spent``): the optimum's loss falls with compute, so a bisection in log C finds it."""
    def gap(log_c: float) -> float:
        return optimum(values, np.exp(log_c), unique_tokens, k=k)[2] - loss

    high, low = np.log(spent), np.log(spent) - np.log(1e6)
    if gap(high) >= 0:
        return spent
    if gap(low) <= 0:
        return float("nan")
    return float(np.exp(brentq(gap, low, high, xtol=1e-9)))


def plan_data_constrained(values: Mapping[str, float], compute: float, unique_tokens: float, *,
                          compare: tuple[float, float] | None = None,
                          flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN,
                          draws: np.ndarray | None = None, ci_level: float = 0.95
                          ) -> DataConstrainedPlan:
    """The compute-optimal N, D and epochs at ``compute`` with ``unique_tokens`` of data.

    Parameters
    ----------
    values : mapping
        Fitted ``E``, ``A``, ``B``, ``alpha``, ``beta``, ``rstar_d``, ``rstar_n``.
    compute : float
        Budget C in FLOPs.
    unique_tokens : float
        Unique tokens U available.
    compare : (N, D), optional
        A planned run, judged against the optimum at the same U.
    flops_per_param_token : float
        k in C = k N D.
    draws : ndarray (B, 7), optional
        Bootstrap draws of the law's parameters (``FitResult.bootstrap_values``, in the
        law's order): the plan is repeated for each, giving percentile intervals.
    ci_level : float
        Level of those intervals.
    """
    check_number("compute", compute, low=0, low_open=True)
    check_number("unique_tokens", unique_tokens, low=0, low_open=True)
    k = check_number("flops_per_param_token", flops_per_param_token, low=0, low_open=True)
    n, d, loss = optimum(values, compute, unique_tokens, k=k)
    n_inf, d_inf, loss_inf = optimum(values, compute, UNLIMITED, k=k)
    plan = DataConstrainedPlan(
        compute=float(compute), unique_tokens=float(unique_tokens), params=n, tokens=d,
        epochs=d / unique_tokens, loss=loss, unlimited_params=n_inf, unlimited_tokens=d_inf,
        unlimited_loss=loss_inf, loss_lost=loss - loss_inf, flops_per_param_token=k)
    if draws is not None and len(draws):
        plan.ci_level = check_number("ci_level", ci_level, low=0, high=1, low_open=True,
                                     high_open=True)
        names = get_law("data_constrained").param_names
        rows = []
        for theta in np.asarray(draws, dtype=float):
            sample = dict(zip(names, theta, strict=True))
            n_b, d_b, loss_b = optimum(sample, compute, unique_tokens, k=k)
            rows.append((n_b, d_b, d_b / unique_tokens,
                         loss_b - optimum(sample, compute, UNLIMITED, k=k)[2]))
        tail = 50.0 * (1.0 - ci_level)
        ends = np.percentile(np.array(rows), [tail, 100.0 - tail], axis=0)
        plan.params_ci, plan.tokens_ci, plan.epochs_ci, plan.loss_lost_ci = (
            (float(ends[0, j]), float(ends[1, j])) for j in range(4))
    if compare is not None:
        cn, cd = (check_number(name, v, low=0, low_open=True)
                  for name, v in zip(("compare_params", "compare_tokens"), compare, strict=True))
        given = float(_loss(values, cn, cd, unique_tokens)[0])
        spent = k * cn * cd
        least = _least_compute(values, given, spent, unique_tokens, k)
        plan.compare_params, plan.compare_tokens, plan.compare_loss = cn, cd, given
        plan.compare_optimal_compute = least
        plan.wasted_compute = spent - least
        plan.wasted_percent = 100.0 * (spent - least) / spent
    return plan
