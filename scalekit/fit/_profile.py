"""Profile likelihood of one parameter: how far the data pin it.

For each value ``v`` of a grid the law is refitted with the parameter held at ``v`` (the
others free; the grid is swept up and down, each fit also started from its neighbour's
optimum, and the lower objective kept). With ``S(v)`` that profile objective (the fit's
robust loss summed over log residuals) and ``S*`` its least value, the deviance is

    dev(v) = (2 n / k) log(S(v) / S*),

the likelihood ratio of the model whose residual density is ``exp(-rho(r) / tau)`` with
its scale ``tau`` profiled out, when ``rho`` is homogeneous of degree ``k``: ``k = 2`` for
squares (Gaussian residuals, ``dev = n log(S / S*)``), ``k = 1`` for a Huber loss whose
residuals lie far beyond its threshold (Laplace residuals). ``k`` is estimated at the best
fit by Euler's relation, ``k = sum r psi(r) / sum rho(r)``. The interval at ``level`` is
the set where ``dev <= chi2_1(level)`` (Venzon & Moolgavkar 1988); an end that the grid
does not close is *open*: the data do not pin the parameter on that side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

from scalekit.checks import check_number, fail
from scalekit.fit._constrain import constrained_law
from scalekit.fit._engine import fit_law
from scalekit.fit._inputs import law_inputs
from scalekit.fit._robust import psi, rho
from scalekit.laws import Law

#: Starts of each profile fit drawn from the law's grid, besides the neighbour's optimum.
GRID_STARTS = 8


@dataclass(frozen=True)
class Profile:
    """The profile of one parameter (:func:`profile_parameter`).

    Attributes
    ----------
    param : str
    values, objective, deviance : ndarray
        The grid, the least objective with the parameter held there, and its deviance.
    level : float
    interval : (float or None, float or None)
        Ends of the ``level`` interval; None where it is open (beyond the grid).
    best : float
        The grid value of least objective.
    degree : float
        The loss's degree ``k`` at the best fit.
    """

    param: str
    values: np.ndarray
    objective: np.ndarray
    deviance: np.ndarray
    level: float
    interval: tuple[float | None, float | None]
    best: float
    degree: float

    @property
    def identified(self) -> bool:
        """Whether the grid closes the interval on both sides."""
        return None not in self.interval

    def to_dict(self) -> dict:
        """JSON-ready: lists of floats, None for an open end."""
        return {"param": self.param, "values": self.values.tolist(),
                "objective": self.objective.tolist(), "deviance": self.deviance.tolist(),
                "level": self.level, "interval": list(self.interval), "best": self.best,
                "degree": self.degree}


def profile_parameter(law: Law, X: Mapping, y, name: str, values, *,
                      fixed: Mapping[str, float] | None = None, loss: str = "huber",
                      delta: float = 1e-3, level: float = 0.95, minimum: float | None = None,
                      seed: int = 0) -> Profile:
    """Profile the objective of ``law`` over ``name`` held at each of ``values``.

    Parameters
    ----------
    law : Law
    X : mapping or DataFrame
        The law's inputs.
    y : 1-d array
        Positive observations.
    name : str
        A free parameter of ``law``.
    values : 1-d array
        At least 3 increasing values within its bounds; with ``minimum`` given, hold the
        fitted value among them (the interval is interpolated between grid values).
    fixed : mapping, optional
        Other parameters held throughout (as in :func:`~scalekit.fit.fit_law`).
    loss, delta : as :func:`~scalekit.fit.fit_law`
    level : float
        Level of the interval.
    minimum : float, optional
        The objective of the fit with ``name`` free, when known: the deviance is taken from
        the lower of it and the profile's least value.
    seed : int
        Seeds the draw of each fit's grid starts.

    Returns
    -------
    Profile
    """
    fixed = dict(fixed or {})
    if name not in law.param_names or name in fixed:
        raise fail("name", name, f"a free parameter of law {law.name!r}")
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) < 3 or not (np.diff(values) > 0).all():
        raise fail("values", f"an array of shape {values.shape}", "at least 3 increasing values")
    check_number("level", level, low=0, high=1, low_open=True, high_open=True)
    X = law_inputs(law, X)
    y = np.asarray(y, dtype=float)
    rng = np.random.default_rng(seed)
    fits = [None] * len(values)
    for order in (range(len(values)), range(len(values) - 1, -1, -1)):
        previous = None
        for i in order:
            held = constrained_law(law, fixed={**fixed, name: values[i]})
            grid = held.start_grid(X, y)
            starts = grid[rng.choice(len(grid), min(GRID_STARTS, len(grid)), replace=False)]
            if previous is not None:
                starts = np.vstack([previous, starts])
            fit = fit_law(law, X, y, fixed={**fixed, name: values[i]}, loss=loss, delta=delta,
                          starts=starts)
            previous = held.to_fitting(np.array([fit.values[p] for p in held.param_names]))
            if fits[i] is None or fit.stats["objective"] < fits[i].stats["objective"]:
                fits[i] = fit
    objective = np.array([fit.stats["objective"] for fit in fits])
    best = int(np.argmin(objective))
    r = np.log(fits[best].predict(X)) - np.log(y)
    degree = float(np.sum(r * psi(r, loss, delta)) / np.sum(rho(r, loss, delta)))
    least = objective[best] if minimum is None else min(objective[best], float(minimum))
    deviance = 2.0 * len(y) / degree * np.log(objective / least)
    scale = np.log(values) if law.params[law.param_names.index(name)].log else values
    if not (deviance <= chi2.ppf(level, 1)).any():
        raise fail("values", "without a value inside the interval", "a grid that holds the "
                   "fitted value (the profile is steeper than the grid's spacing)")
    return Profile(param=name, values=values, objective=objective, deviance=deviance,
                   level=level, interval=_interval(values, scale, deviance, chi2.ppf(level, 1)),
                   best=float(values[best]), degree=degree)


def _interval(values, scale, deviance, threshold):
    """Ends of ``{v : deviance(v) <= threshold}`` (its hull), interpolated linearly in
    ``scale`` on the root of the deviance (exact for a quadratic one); None where the grid's
    end is inside."""
    inside = np.flatnonzero(deviance <= threshold)
    root, threshold = np.sqrt(np.maximum(deviance, 0.0)), np.sqrt(threshold)
    first, last = inside[0], inside[-1]
    ends = []
    for edge, outside in ((first, first - 1), (last, last + 1)):
        if outside < 0 or outside >= len(values):
            ends.append(None)
            continue
        t = (threshold - root[edge]) / (root[outside] - root[edge])
        s = scale[edge] + t * (scale[outside] - scale[edge])
        ends.append(float(np.exp(s) if scale is not values else s))
    return tuple(ends)
