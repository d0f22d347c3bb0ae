"""The plans a fitted law answers, and their result.

* :func:`plan_for_compute` — what a compute budget buys: N*, D* and the loss to
  expect. For a law of parameters N and tokens D the optimum under C = k·N·D is found
  by a bounded one-dimensional search over log N (any law of N and D); its interval
  comes from repeating the search for every bootstrap parameter set (the delta method
  without a bootstrap). For a law of compute alone, the plan is the predicted loss at
  C. A budget beyond the compute of the fitted runs, or an N* beyond their sizes, is
  said with its factor (``extrapolation``).
* :func:`plan_for_loss` — the least compute reaching a loss: the optimal loss
  ``L*(C)`` falls as C grows, so it is a root of ``L*(C) - L`` in log C.
* :func:`compare_allocation` — what a chosen (N, D) spends beyond the optimum.

Each returns a :class:`ComputePlan`: the result protocol (``to_dict`` /
``from_dict``, ``summary``, a one-line ``repr``) over the plan's values, which it also
hands out by key (``plan["params"]``, ``plan["diagnostics"]``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.compute import FLOPS_PER_PARAM_TOKEN, flops_rule, tokens_for_compute, training_flops
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit._uncertainty import function_intervals
from scalekit.results import ResultProtocol

#: The kinds of plan, by the question each answers.
PLAN_KINDS = {"compute": "what a compute budget buys",
              "loss": "the least compute reaching a loss",
              "comparison": "the compute a chosen N, D spends beyond the optimum"}


@dataclass(repr=False)
class ComputePlan(ResultProtocol, Mapping):
    """A plan's ``kind`` (a key of :data:`PLAN_KINDS`), its values and diagnostics.

    Attributes
    ----------
    kind : str
    values : dict
        The plan's numbers and strings (``compute``, ``params``, ``loss``, their
        intervals ``*_ci`` / ``loss_pi``, ``convention``, ...; see the function that
        made it). For an array of budgets every number is an array.
    diagnostics : list of Diagnostic
        ``extrapolation`` and the like, for the plan's own numbers.
    """

    kind: str
    values: dict
    diagnostics: list = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.diagnostics if key == "diagnostics" else self.values[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.values
        yield "diagnostics"

    def __len__(self) -> int:
        return len(self.values) + 1

    def to_dict(self) -> dict[str, Any]:
        values = {k: v.tolist() if isinstance(v, np.ndarray) else v
                  for k, v in self.values.items()}
        return {"kind": self.kind, **values,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComputePlan:
        values = {k: v for k, v in data.items() if k not in ("kind", "diagnostics")}
        return cls(data["kind"], values,
                   [Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self):
        """One row per planned budget (one row for a plan of one): every number, each
        interval as ``<name>_low`` and ``<name>_high``."""
        import pandas as pd

        columns = {}
        for key, value in self.values.items():
            if isinstance(value, str):
                continue
            if key.endswith(("_ci", "_pi")):
                ends = np.asarray(value, dtype=float)
                columns[f"{key}_low"], columns[f"{key}_high"] = ends[0], ends[1]
            else:
                columns[key] = value
        return pd.DataFrame({k: np.atleast_1d(np.asarray(v, dtype=float))
                             for k, v in columns.items()})

    def _summary_title(self) -> str:
        return f"Compute plan: {PLAN_KINDS[self.kind]}"

    def _summary_sections(self):
        intervals = {k: v for k, v in self.values.items() if k.endswith(("_ci", "_pi"))}
        return [("Plan", [(k, v) for k, v in self.values.items() if k not in intervals]),
                ("Intervals", list(intervals.items())),
                ("Diagnostics", [f"{d.severity}: {d.message}" for d in self.diagnostics])]

    def _repr_fields(self) -> dict[str, Any]:
        keys = [k for k in ("target_loss", "compute", "params", "tokens", "loss", "extra")
                if k in self.values and np.ndim(self.values[k]) == 0]
        fields = {"kind": self.kind, **{k: self.values[k] for k in keys}}
        if np.ndim(self.values.get("compute", 0)):
            fields["budgets"] = int(np.size(self.values["compute"]))
        return fields


#: An extrapolation by more than this factor is a warning; a smaller one is noted.
EXTRAPOLATION_WARN = 10.0


def _named(law, theta) -> str:
    """``name=value`` of each of the law's parameters, for a message."""
    return ", ".join(f"{p.name}={float(v):.4g}" for p, v in zip(law.params, theta, strict=True))


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
    if not np.isfinite(losses).any():
        raise InputError(f"the law predicts no finite loss at any model size for compute "
                         f"{compute:.3g}: check its parameters ({_named(law, theta)})")
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
    for key, pair in zip(("params", "tokens", "tokens_per_param"), ends, strict=True):
        if np.isfinite(pair).all():
            plan[f"{key}_ci"] = [float(pair[0]), float(pair[1])]
    plan["diagnostics"] = _extrapolation(result, compute, n_star, k) + _at_edge(
        n_star, plan.get("params_ci"), compute, k, result.ci_level)
    return plan


def _at_edge(n_star: float, interval, compute: float, k: float, level: float) -> list[Diagnostic]:
    """``optimum_at_edge`` when N*, or an end of its interval, is an end of the sizes
    :func:`optimal_params` searches (1 to C/k parameters): there the loss keeps falling
    to the edge, so that end is not a model size."""
    edges = (1.0, compute / k)
    ends = [("N*", n_star)] + ([] if interval is None else
                               [(f"the lower end of N*'s {level:.0%} interval", interval[0]),
                                (f"the upper end of N*'s {level:.0%} interval", interval[1])])
    hit = [what for what, value in ends
           if any(abs(np.log(value / edge)) < 1e-6 for edge in edges)]
    if not hit:
        return []
    return [Diagnostic(
        "optimum_at_edge", "warning", f"at {compute:.3g} FLOPs {' and '.join(hit)} is an edge of "
        f"the sizes searched (1 to C/k = {edges[1]:.3g} parameters): there the law's loss keeps "
        "falling to the edge (in some bootstrap fits, for an interval's end), so it is not a "
        "model size; the fit does not pin the law's size and data terms: add runs that vary N "
        "at fixed compute", value=float(len(hit)))]


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


_LOG_C_RANGE = (np.log(1e6), np.log(1e40))


def optimal_loss(law, theta, compute: float, *,
                 flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> tuple:
    """``(N*, D*, L*)`` at ``compute`` for natural parameters ``theta``."""
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
    from scipy.optimize import brentq  # loaded on first use: the fit face stays light

    return float(np.exp(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-12)))


def plan_for_loss(result, target_loss: float, *,
                  flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> ComputePlan:
    """Least compute reaching ``target_loss`` and its N*, D* (intervals from the bootstrap),
    a :class:`~scalekit.fit._plans.ComputePlan` of kind ``"loss"``.

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

    Returns a :class:`~scalekit.fit._plans.ComputePlan` of kind ``"comparison"``: the
    chosen compute ``k·N·D``, its predicted loss, the optimal compute,
    N*, D* for that loss, the ``extra`` FLOPs, ``extra_percent`` (of the optimal
    compute) and ``saving_percent`` (of the chosen compute).
    """
    check_number("params", params, low=0, low_open=True)
    check_number("tokens", tokens, low=0, low_open=True)
    law, theta = _law_and_theta(result)
    k = flops_per_param_token
    chosen = training_flops(params, tokens, flops_per_param_token=k)
    if not np.isfinite(chosen):
        raise InputError(f"The value of `params` times `tokens` is {params:g} x {tokens:g}, but "
                         "must give a finite compute (6·N·D overflows)")
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
