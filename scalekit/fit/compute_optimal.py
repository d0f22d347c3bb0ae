"""What a fitted law says about one compute budget: N*, D* and the loss to expect.

For a law of parameters N and tokens D the optimum under C = k·N·D is found by
a bounded one-dimensional search over log N (any law of N and D); its
interval comes from repeating the search for every bootstrap parameter set
(the delta method without a bootstrap). For a law of compute alone, the plan
is the predicted loss at C. A budget beyond the compute of the fitted runs, or
an N* beyond their sizes, is said with its factor (``extrapolation``).
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.compute import FLOPS_PER_PARAM_TOKEN, flops_rule, tokens_for_compute
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit.compute_plan import ComputePlan
from scalekit.fit.uncertainty import function_intervals

#: An extrapolation by more than this factor is a warning; a smaller one is noted.
EXTRAPOLATION_WARN = 10.0


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

    from scipy.optimize import minimize_scalar

    found = minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                            options={"xatol": 1e-10})
    return float(np.exp(found.x))


def plan_for_compute(result, compute, *,
                     flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> ComputePlan:
    """Compute-optimal N*, D* and predicted loss (with intervals) at ``compute`` FLOPs.

    Parameters
    ----------
    result : FitResult
        A fitted law of (``params``, ``tokens``) or of ``compute``.
    compute : float or 1-d array
        The budget(s) in FLOPs.
    flops_per_param_token : float
        k in C = k·N·D (6 for dense transformers, Kaplan et al. 2020).

    Returns
    -------
    ComputePlan
        Of kind ``"compute"``, with the values (also read by key) ``compute``,
        ``convention``, ``loss`` with ``loss_ci`` (the mean law) and
        ``loss_pi`` (a new run), at ``result.ci_level``; for N–D laws also
        ``params``, ``tokens``, ``tokens_per_param`` and their ``*_ci`` from the fit's
        bootstrap draws (the delta method without a bootstrap); and
        ``diagnostics``, a list of :class:`~scalekit.diagnostics.Diagnostic`
        (``extrapolation`` when the budget or N* lies beyond the fitted data). For
        an array of budgets every value is an array (intervals of shape (K, 2)) and
        ``diagnostics`` holds those of every budget.
    """
    if np.ndim(compute) == 0:
        plan = _plan_one(result, compute, flops_per_param_token)
        return ComputePlan("compute", plan, plan.pop("diagnostics"))
    budgets = np.asarray(compute, dtype=float)
    if budgets.ndim != 1 or not budgets.size:
        raise fail("compute", f"an array of shape {budgets.shape}", "a number or a 1-d array")
    plans = [_plan_one(result, float(c), flops_per_param_token) for c in budgets]
    values = {key: (plans[0][key] if isinstance(plans[0][key], str) else
                    np.array([p[key] for p in plans], dtype=float))
              for key in plans[0] if key != "diagnostics"}
    return ComputePlan("compute", values, [d for p in plans for d in p["diagnostics"]])


def _plan_one(result, compute: float, k: float) -> dict:
    check_number("target_compute", compute, low=0, low_open=True)
    check_number("flops_per_param_token", k, low=0, low_open=True)
    law = result.law
    if set(law.inputs) == {"compute"}:
        X = {"compute": np.array([compute])}
        plan = {"compute": compute, "convention": "compute as given", **_loss(result, X)}
        plan["diagnostics"] = _extrapolation(result, compute, None, k)
        return plan
    if set(law.inputs) != {"params", "tokens"}:
        raise InputError(f"`target_compute` needs a law of params and tokens or of compute; "
                         f"{law.name!r} reads {', '.join(law.inputs)}")
    n_star = optimal_params(law, result.theta, compute, flops_per_param_token=k)
    d_star = tokens_for_compute(compute, n_star, flops_per_param_token=k)
    X = {"params": np.array([n_star]), "tokens": np.array([d_star])}
    plan = {"compute": compute, "convention": flops_rule(k),
            "params": n_star, "tokens": d_star, "tokens_per_param": d_star / n_star,
            **_loss(result, X)}

    def allocation(theta):
        n = optimal_params(law, theta, compute, flops_per_param_token=k)
        d = tokens_for_compute(compute, n, flops_per_param_token=k)
        return np.array([n, d, d / n])

    ends = function_intervals(allocation, law, law.to_fitting(result.theta), result.covariance,
                              result.bootstrap_values, result.ci_level, result.stats.get("dof"))
    for key, pair in zip(("params", "tokens", "tokens_per_param"), ends):
        if np.isfinite(pair).all():
            plan[f"{key}_ci"] = [float(pair[0]), float(pair[1])]
    plan["diagnostics"] = _extrapolation(result, compute, n_star, k)
    return plan


def _loss(result, X) -> dict:
    out = {"loss": float(result.predict(X)[0])}
    for kind, key in (("confidence", "loss_ci"), ("prediction", "loss_pi")):
        try:
            lo, hi = result.interval(X, kind=kind)
        except (ValueError, RuntimeError):
            out[key] = None
            continue
        out[key] = [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])]
    return out


def _extrapolation(result, compute: float, n_star: float | None, k: float) -> list[Diagnostic]:
    """``extrapolation`` when the budget (or N*) lies beyond the range of the fitted data."""
    stats = result.stats
    ranges = {}
    if "nd_range" in stats:
        ranges["compute"] = (k * stats["nd_range"][0], k * stats["nd_range"][1], compute)
    elif "compute" in stats.get("input_range", {}):
        ranges["compute"] = (*stats["input_range"]["compute"], compute)
    if n_star is not None and "params" in stats.get("input_range", {}):
        ranges["N*"] = (*stats["input_range"]["params"], n_star)
    found = []
    for what, (low, high, value) in ranges.items():
        factor = value / high if value > high else low / value if value < low else 1.0
        if factor <= 1.0:
            continue
        unit, noun = (" FLOPs", "compute") if what == "compute" else (" parameters", "size")
        side = (f"{factor:.3g}x the largest {noun}" if value > high
                else f"1/{factor:.3g} of the smallest {noun}")
        found.append(Diagnostic(
            "extrapolation", "warning" if factor > EXTRAPOLATION_WARN else "info",
            f"the plan's {what} {value:.3g}{unit} is {side} of the fitted runs "
            f"({low:.3g}-{high:.3g}{unit}), an extrapolation: its intervals assume the law "
            "holds out there; check it against a run nearer the target", value=float(factor)))
    return found
