"""How many inference-time samples to draw, at which temperature, and samples versus data.

Halder and Pehlevan, "Demystifying LLM-as-a-judge: an analytically tractable
model for inference-time scaling". Three questions:

- :func:`plan_samples`: the ``k`` that minimises error plus a cost per sample, for a
  fitted ``inference_k`` law (or any error curve);
- :func:`best_temperature`: the softmax temperature of least error at a given ``k``
  in the theory model, found numerically (best-of-k, ``T = 0``, and a random pick,
  ``T = infinity``, are the two ends);
- :func:`samples_or_data`: whether multiplying the samples or the training data
  lowers the error more per unit cost in the theory model.

:func:`simulate_samples` computes the theory model's error against ``k`` both ways
(quadrature and Monte Carlo) with its closed forms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from scalekit.checks import check_number
from scalekit.formatting import format_number
from scalekit.laws import INFERENCE_K
from scalekit.planners._judge_model import (JudgeModel, Predictive, best_of_k_asymptote, error_many_samples,
                                            error_one_sample)
from scalekit.planners._judge_selection import monte_carlo_errors, quadrature_errors
from scalekit.results import FlatResult

ErrorCurve = Callable[[np.ndarray], np.ndarray]

#: Quadrature grids for the temperature search (relative accuracy about 1e-4).
_SEARCH_GRIDS = {"radius_points": 300, "gumbel_points": 200}


@dataclass(frozen=True, repr=False)
class SamplesPlan(FlatResult):
    """Samples per query that minimise error plus cost, and the least error ignoring cost.

    Attributes
    ----------
    k : int
        The plan.
    error, objective : float
        Error and ``error + cost_per_sample * k`` there.
    cost_per_sample : float
    k_least_error : int
        The k of least error ignoring cost, and that error, ``least_error``.
    least_error : float
    """

    k: int
    error: float
    objective: float
    cost_per_sample: float
    k_least_error: int
    least_error: float

    def _summary_title(self) -> str:
        return f"Samples per query at a cost of {format_number(self.cost_per_sample)} each"

    def _summary_sections(self):
        return [("Plan", [("k", self.k), ("error", self.error), ("objective", self.objective)]),
                ("Ignoring cost", [("k of least error", self.k_least_error),
                                   ("least error", self.least_error)])]

    def _repr_fields(self) -> dict:
        return {"k": self.k, "objective": self.objective, "error": self.error}


#: Largest ``k_max`` of :func:`plan_samples` (every k up to it is tried: 80 MB of floats).
MAX_K = 10_000_000


def plan_samples(error: ErrorCurve | Mapping[str, float], cost_per_sample: float, *,
                 k_max: int = 100_000) -> SamplesPlan:
    """Whole ``k`` in ``1..k_max`` minimising ``error(k) + cost_per_sample * k``.

    Parameters
    ----------
    error : callable or mapping
        Error against k, vectorised; or the values of a fitted ``inference_k`` law.
    cost_per_sample : float
        Cost of one more sample, in units of error.
    k_max : int
        Largest k considered.

    Returns
    -------
    SamplesPlan
    """
    check_number("cost_per_sample", cost_per_sample, low=0)
    k_max = check_number("k_max", k_max, low=1, high=MAX_K, integer=True)
    if isinstance(error, Mapping):
        theta = np.array([error[name] for name in INFERENCE_K.param_names], dtype=float)
        error = lambda k: INFERENCE_K.function({"k": k}, theta)  # noqa: E731
    ks = np.arange(1, k_max + 1, dtype=float)
    errors = np.asarray(error(ks), dtype=float)
    objective = errors + cost_per_sample * ks
    best, least = int(np.argmin(objective)), int(np.argmin(errors))
    return SamplesPlan(k=int(ks[best]), error=float(errors[best]),
                       objective=float(objective[best]), cost_per_sample=float(cost_per_sample),
                       k_least_error=int(ks[least]), least_error=float(errors[least]))


def best_temperature(predictive: Predictive, k: int, *,
                     bounds: tuple[float, float] = (1e-4, 1e4)) -> dict:
    """Softmax temperature of least error for ``k`` samples, by bounded search on ``log T``.

    Returns ``temperature``, ``error`` there, ``error_best_of_k`` (``T = 0``) and
    ``error_random`` (``T = infinity``, the k = 1 error). When an end beats every
    inner temperature, ``temperature`` is 0 or ``inf`` accordingly.
    """
    k = check_number("k", k, low=1, integer=True)
    low, high = bounds
    check_number("bounds[0]", low, low=0, low_open=True)
    check_number("bounds[1]", high, low=low, low_open=True)

    def error_at(log_t: float) -> float:
        return float(quadrature_errors(predictive, [k], float(np.exp(log_t)), **_SEARCH_GRIDS)[0])

    grid = np.linspace(np.log(low), np.log(high), 9)
    values = np.array([error_at(v) for v in grid])
    j = int(np.argmin(values))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    found = minimize_scalar(error_at, bounds=(lo, hi), method="bounded", options={"xatol": 0.05})
    temperature, error = (float(np.exp(found.x)), float(found.fun)) if found.fun <= values[j] \
        else (float(np.exp(grid[j])), float(values[j]))
    best_of_k = float(quadrature_errors(predictive, [k], 0.0, **_SEARCH_GRIDS)[0])
    random_pick = error_one_sample(predictive)
    if best_of_k < error:
        temperature, error = 0.0, best_of_k
    if random_pick < error:
        temperature, error = float("inf"), random_pick
    return {"k": k, "temperature": temperature, "error": error,
            "error_best_of_k": best_of_k, "error_random": random_pick}


def samples_or_data(model: JudgeModel, *, k: int, temperature: float, factor: float = 2.0,
                    cost_per_sample: float = 1.0, cost_per_example: float = 1.0) -> dict:
    """Compare multiplying the samples ``k`` or the training set by ``factor``.

    The extra samples cost ``(factor - 1) k cost_per_sample`` and the extra data
    ``(factor - 1) n_train cost_per_example``; the better buy lowers the error
    more per unit cost. Errors are the quadrature of the theory model, averaged
    over the model's test inputs (a fresh training set for the larger data).
    """
    k = check_number("k", k, low=1, integer=True)
    check_number("factor", factor, low=1, low_open=True)
    check_number("cost_per_sample", cost_per_sample, low=0, low_open=True)
    check_number("cost_per_example", cost_per_example, low=0, low_open=True)
    more_k = max(k + 1, int(round(k * factor)))
    base = model.draw()
    error, error_more_samples = quadrature_errors(base, [k, more_k], temperature)
    more_n = max(model.n_train + 1, int(round(model.n_train * factor)))
    bigger = dataclasses.replace(model, n_train=more_n).draw()
    error_more_data = float(quadrature_errors(bigger, [k], temperature)[0])
    gain_samples = (error - error_more_samples) / ((more_k - k) * cost_per_sample)
    gain_data = (error - error_more_data) / ((more_n - model.n_train) * cost_per_example)
    return {"error": float(error), "k": k, "n_train": model.n_train,
            "more_samples": {"k": more_k, "error": float(error_more_samples),
                             "gain_per_cost": float(gain_samples)},
            "more_data": {"n_train": more_n, "error": error_more_data,
                          "gain_per_cost": float(gain_data)},
            "better": "samples" if gain_samples >= gain_data else "data"}


@dataclass(frozen=True, repr=False)
class SampleSimulation(FlatResult):
    """The theory model's error against the number of samples ``k``.

    Attributes
    ----------
    model : dict
        The :class:`~scalekit.planners._judge_model.JudgeModel` settings.
    temperature : float
    k : tuple of int
        About 12 values from 1 to ``k_max``, evenly spaced in log.
    quadrature, monte_carlo, monte_carlo_stderr : tuple of float
        The error at each ``k``: deterministic quadrature, and Monte Carlo with its
        standard error.
    closed_forms : dict
        ``k=1`` always; ``k->inf`` for a softmax pick (``temperature > 0``); the
        best-of-k asymptote at each ``k`` (``best_of_k_asymptote``) for a judge that is
        the teacher at ``temperature = 0``.
    k_least_error : int
        The ``k`` of least quadrature error, and that error (``least_error``).
    least_error : float
    """

    model: dict
    temperature: float
    k: tuple
    quadrature: tuple
    monte_carlo: tuple
    monte_carlo_stderr: tuple
    closed_forms: dict
    k_least_error: int
    least_error: float

    def _summary_title(self) -> str:
        return f"Theory model of inference-time samples, T = {format_number(self.temperature)}"

    def _summary_sections(self):
        scalars = {k: v for k, v in self.closed_forms.items() if not isinstance(v, list)}
        return [("Least error", [("k", self.k_least_error), ("error", self.least_error)]),
                ("Closed forms", list(scalars.items())),
                ("Error by k (quadrature, Monte Carlo ± stderr)",
                 [(f"k = {k}", f"{format_number(q)}, {format_number(m)} ± {format_number(s)}")
                  for k, q, m, s in zip(self.k, self.quadrature, self.monte_carlo,
                                        self.monte_carlo_stderr, strict=True)])]

    def _repr_fields(self) -> dict:
        return {"temperature": self.temperature, "k_least_error": self.k_least_error,
                "least_error": self.least_error}


def simulate_samples(model: JudgeModel, *, temperature: float = 0.0, k_max: int = 256,
                     repeats: int = 200, seed: int = 0) -> SampleSimulation:
    """The error of the judge's pick among ``k`` samples in the theory model, for about 12
    ``k`` from 1 to ``k_max``: quadrature, Monte Carlo (``repeats`` draws, ``seed``) and the
    closed forms (Halder & Pehlevan)."""
    k_max = check_number("k_max", k_max, low=1, high=100_000, integer=True)
    predictive = model.draw()
    ks = np.unique(np.round(np.geomspace(1, k_max, 12)).astype(int))
    quadrature = quadrature_errors(predictive, ks, temperature)
    mc, stderr = monte_carlo_errors(predictive, ks, temperature, repeats=repeats, seed=seed)
    closed = {"k=1": error_one_sample(predictive)}
    if temperature > 0:
        closed["k->inf"] = error_many_samples(predictive, temperature)
    if temperature == 0 and model.misspecification == 0:
        closed["best_of_k_asymptote"] = best_of_k_asymptote(predictive, ks).tolist()
    best = int(np.argmin(quadrature))
    return SampleSimulation(model.to_dict(), float(temperature), tuple(ks.tolist()),
                            tuple(quadrature.tolist()), tuple(mc.tolist()),
                            tuple(stderr.tolist()), closed, int(ks[best]),
                            float(quadrature[best]))
