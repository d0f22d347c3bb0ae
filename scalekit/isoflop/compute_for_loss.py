"""Plans from a fitted law of N and D: the least compute for a target loss, and what
a chosen (N, D) spends beyond the compute-optimal allocation.

For a budget C the optimum is found by :func:`scalekit.fit.compute_optimal.optimal_params`
(a search over log N under C = k·N·D, any law of N and D); the optimal loss
``L*(C)`` falls as C grows, so the least compute reaching a loss is a root of
``L*(C) - L`` in log C. Intervals repeat the search for every bootstrap
parameter set of the fit. (For the compute plan itself see
:func:`scalekit.fit.compute_optimal.plan_for_compute`.)
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN, flops_rule, tokens_for_compute, training_flops
from scalekit.errors import InputError
from scalekit.fit.compute_plan import ComputePlan

_LOG_C_RANGE = (np.log(1e6), np.log(1e40))


def optimal_loss(law, theta, compute: float, *,
                 flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> tuple:
    """``(N*, D*, L*)`` at ``compute`` for natural parameters ``theta``."""
    from scalekit.fit.compute_optimal import optimal_params

    n_star = optimal_params(law, theta, compute, flops_per_param_token=flops_per_param_token)
    d_star = tokens_for_compute(compute, n_star, flops_per_param_token=flops_per_param_token)
    loss = float(law.predict({"params": np.array([n_star]), "tokens": np.array([d_star])},
                             theta)[0])
    return n_star, d_star, loss


def least_compute(law, theta, target_loss: float, *,
                  flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> float:
    """The least compute whose optimal allocation reaches ``target_loss`` (nan if none)."""
    def gap(log_c: float) -> float:
        return optimal_loss(law, theta, float(np.exp(log_c)),
                            flops_per_param_token=flops_per_param_token)[2] - target_loss

    lo, hi = _LOG_C_RANGE
    if gap(hi) > 0:
        return float("nan")  # below what any budget reaches (at or under the floor E)
    if gap(lo) <= 0:
        return float(np.exp(lo))
    return float(np.exp(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12)))


def plan_for_loss(result, target_loss: float, *,
                  flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> ComputePlan:
    """Least compute reaching ``target_loss`` and its N*, D* (intervals from the bootstrap),
    a :class:`~scalekit.fit.compute_plan.ComputePlan` of kind ``"loss"``.

    Parameters
    ----------
    result : FitResult
        A fitted law of ``params`` and ``tokens``.
    target_loss : float
    flops_per_param_token : float
        k in C = k·N·D.
    """
    check_number("target_loss", target_loss, low=0, low_open=True)
    law, theta = _law_and_theta(result)
    k = flops_per_param_token
    compute = least_compute(law, theta, target_loss, flops_per_param_token=k)
    if not np.isfinite(compute):
        floor = float(law.predict({"params": np.array([1e30]), "tokens": np.array([1e30])},
                                  theta)[0])
        raise InputError(f"The value of `target_loss` is {target_loss!r}, but must be above the "
                         f"loss the fitted law approaches with unlimited compute ({floor:.4g}).")
    n_star, d_star, _ = optimal_loss(law, theta, compute, flops_per_param_token=k)
    plan = {"target_loss": target_loss, "compute": compute, "convention": flops_rule(k),
            "params": n_star, "tokens": d_star, "tokens_per_param": d_star / n_star}
    boot = getattr(result, "bootstrap_values", None)
    if boot is not None and len(boot):
        rows = [least_compute(law, t, target_loss, flops_per_param_token=k) for t in boot]
        rows = np.array([c for c in rows if np.isfinite(c)])
        if rows.size:
            tails = [50 * (1 - result.ci_level), 50 * (1 + result.ci_level)]
            plan["compute_ci"] = np.percentile(rows, tails).tolist()
            plan["bootstrap_reaching"] = f"{rows.size} of {len(boot)}"
    return ComputePlan("loss", plan)


def compare_allocation(result, params: float, tokens: float, *,
                       flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> ComputePlan:
    """Compute a chosen ``(N, D)`` spends beyond the optimum reaching the same predicted loss.

    Returns a :class:`~scalekit.fit.compute_plan.ComputePlan` of kind ``"comparison"``: the
    chosen compute ``k·N·D``, its predicted loss, the optimal compute,
    N*, D* for that loss, the ``extra`` FLOPs, ``extra_percent`` (of the optimal
    compute) and ``saving_percent`` (of the chosen compute).
    """
    check_number("params", params, low=0, low_open=True)
    check_number("tokens", tokens, low=0, low_open=True)
    law, theta = _law_and_theta(result)
    k = flops_per_param_token
    chosen = training_flops(params, tokens, flops_per_param_token=k)
    loss = float(law.predict({"params": np.array([params]), "tokens": np.array([tokens])},
                             theta)[0])
    optimal = least_compute(law, theta, loss, flops_per_param_token=k)
    n_star, d_star, _ = optimal_loss(law, theta, optimal, flops_per_param_token=k)
    extra = chosen - optimal
    return ComputePlan("comparison", {
        "params": params, "tokens": tokens, "compute": chosen, "loss": loss,
        "optimal_compute": optimal, "optimal_params": n_star, "optimal_tokens": d_star,
        "extra": extra, "extra_percent": 100 * extra / optimal,
        "saving_percent": 100 * extra / chosen, "convention": flops_rule(k)})


def _law_and_theta(result):
    law = result.law
    if set(law.inputs) != {"params", "tokens"}:
        raise InputError(f"plans by loss need a law of params and tokens; {law.name!r} reads "
                         f"{', '.join(law.inputs)}")
    return law, np.array([result.values[name] for name in law.param_names], dtype=float)
