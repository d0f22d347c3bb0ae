"""What a fitted law says about one compute budget: N*, D* and the loss to expect.

For a law of parameters N and tokens D the optimum under C = k·N·D is found by
a bounded one-dimensional search over log N (any law of N and D); its
interval comes from repeating the search for every bootstrap parameter set.
For a law of compute alone, the plan is the predicted loss at C.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from scalekit.checks import check_number
from scalekit.compute import FLOPS_PER_PARAM_TOKEN, flops_rule, tokens_for_compute
from scalekit.errors import InputError


def optimal_params(law, theta: np.ndarray, compute: float, *,
                   flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> float:
    """The N that minimises ``law(N, C/(k·N))`` for natural parameters ``theta``.

    A grid over N from 1 to C/k locates the basin; a bounded Brent search
    between the grid neighbours of the best point polishes it.
    """
    budget = compute / flops_per_param_token
    log_n = np.linspace(0.0, np.log(budget), 2001)
    with np.errstate(all="ignore"):
        losses = law.predict({"params": np.exp(log_n), "tokens": budget / np.exp(log_n)}, theta)
    best = int(np.nanargmin(losses))
    lo, hi = log_n[max(best - 1, 0)], log_n[min(best + 1, len(log_n) - 1)]

    def objective(u: float) -> float:
        return float(law.predict({"params": np.array([np.exp(u)]),
                                  "tokens": np.array([budget / np.exp(u)])}, theta)[0])

    found = minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                            options={"xatol": 1e-10})
    return float(np.exp(found.x))


def plan_for_compute(result, compute: float, *,
                     flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> dict:
    """Compute-optimal N*, D* and predicted loss (with intervals) at ``compute`` FLOPs.

    Parameters
    ----------
    result : FitResult
        A fitted law of (``params``, ``tokens``) or of ``compute``.
    compute : float
        The budget in FLOPs.
    flops_per_param_token : float
        k in C = k·N·D (6 for dense transformers, Kaplan et al. 2020).

    Returns
    -------
    dict
        ``compute``, ``convention``, ``loss`` and ``loss_pi`` (prediction interval
        at ``result.ci_level``); for N–D laws also ``params``, ``tokens``,
        ``tokens_per_param`` and their ``*_ci`` from the bootstrap when it ran.
    """
    check_number("target_compute", compute, low=0, low_open=True)
    law = result.law
    level = result.ci_level
    if set(law.inputs) == {"compute"}:
        X = {"compute": np.array([compute])}
        return {"compute": compute, "convention": "compute as given",
                "loss": float(result.predict(X)[0]), "loss_pi": _pi(result, X)}
    if set(law.inputs) != {"params", "tokens"}:
        raise InputError(f"--target-compute needs a law of params and tokens or of compute; "
                         f"{law.name!r} reads {', '.join(law.inputs)}")
    theta = np.array([result.values[name] for name in law.param_names])
    n_star = optimal_params(law, theta, compute, flops_per_param_token=flops_per_param_token)
    d_star = tokens_for_compute(compute, n_star, flops_per_param_token=flops_per_param_token)
    X = {"params": np.array([n_star]), "tokens": np.array([d_star])}
    plan = {"compute": compute, "convention": flops_rule(flops_per_param_token),
            "params": n_star, "tokens": d_star, "tokens_per_param": d_star / n_star,
            "loss": float(result.predict(X)[0]), "loss_pi": _pi(result, X)}
    if result.bootstrap_values is not None and len(result.bootstrap_values):
        n_boot = np.array([optimal_params(law, t, compute,
                                          flops_per_param_token=flops_per_param_token)
                           for t in result.bootstrap_values])
        d_boot = compute / (flops_per_param_token * n_boot)
        tails = [50 * (1 - level), 50 * (1 + level)]
        plan["params_ci"] = np.percentile(n_boot, tails).tolist()
        plan["tokens_ci"] = np.percentile(d_boot, tails).tolist()
        plan["tokens_per_param_ci"] = np.percentile(d_boot / n_boot, tails).tolist()
    return plan


def _pi(result, X) -> list[float] | None:
    try:
        lo, hi = result.interval(X, kind="prediction")
    except (ValueError, RuntimeError):
        return None
    return [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])]
