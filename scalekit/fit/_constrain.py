"""A law with some parameters fixed and others bounded, for one fit.

``constrained_law(law, fixed={"E": 1.69}, bounds={"alpha": (0, 1)})`` is the
law of the remaining parameters: fixed values are put back into every call of
the formula (and their Jacobian columns dropped), bounds replace the search
range and cut the start grid to it. The fit engine fits the returned law and
reports the fixed values with it (``FitResult.fixed``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from scalekit.checks import fail
from scalekit.laws import Law, Param


def constrained_law(law: Law, *, fixed: Mapping[str, float] | None = None,
                    bounds: Mapping[str, tuple[float, float]] | None = None) -> Law:
    """``law`` with the parameters in ``fixed`` held and those in ``bounds`` kept in range.

    Parameters
    ----------
    law : Law
    fixed : mapping of parameter name to value, optional
    bounds : mapping of parameter name to (lower, upper), optional
        Natural units; ``None`` or an infinite end leaves that side as the law has it.

    Returns
    -------
    Law
        Same name, inputs and formula; ``extra["fixed"]`` and ``extra["bounds"]``
        record the constraints (they travel in the JSON report).
    """
    fixed = dict(fixed or {})
    bounds = dict(bounds or {})
    if not fixed and not bounds:
        return law
    names = law.param_names
    for what, given in (("fixed", fixed), ("bounds", bounds)):
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise fail(what, unknown[0] if len(unknown) == 1 else unknown,
                       "a parameter of law " f"{law.name!r} ({', '.join(names)})")
    if set(fixed) & set(bounds):
        raise fail("bounds", sorted(set(fixed) & set(bounds)), "free of fixed parameters")
    if len(fixed) >= len(names):
        raise fail("fixed", sorted(fixed), "leaving at least one parameter free")
    params = tuple(_bounded(p, bounds[p.name]) if p.name in bounds else p for p in law.params)
    for p in params:
        if p.name in fixed:
            value = float(fixed[p.name])
            if not (np.isfinite(value) and p.lower <= value <= p.upper):
                raise fail(f"fixed[{p.name!r}]", fixed[p.name],
                           f"a finite number within [{p.lower:g}, {p.upper:g}]")
            fixed[p.name] = value
    free = np.array([p.name not in fixed for p in params])
    template = np.array([fixed.get(p.name, np.nan) for p in params], dtype=float)
    z_template = law.to_fitting(template)

    def full(theta, values):
        theta = np.asarray(theta, dtype=float)
        out = np.broadcast_to(values, theta.shape[:-1] + values.shape).copy()
        out[..., free] = theta
        return out

    def function(X, theta):
        return law.function(X, full(theta, template))

    def log_function(X, z):
        return law.log_predict_fitting(X, full(z, z_template))

    log_value_and_jacobian = None
    if law.log_value_and_jacobian is not None:
        def log_value_and_jacobian(X, z):
            value, J = law.log_value_and_jacobian(X, full(z, z_template))
            return value, J[..., free]

    data_grid = None
    if law.data_grid is not None:
        def data_grid(X, y):
            return {k: v for k, v in law.data_grid(X, y).items() if k not in fixed}

    derive = None
    if law.derive is not None:
        def derive(values):
            return law.derive({**fixed, **values})

    extra = dict(law.extra)
    extra.update(fixed=dict(fixed), bounds={k: tuple(map(float, v)) for k, v in bounds.items()})
    return dataclasses.replace(
        law, params=tuple(p for p in params if p.name not in fixed), function=function,
        log_function=log_function, log_jacobian=None,
        log_value_and_jacobian=log_value_and_jacobian, data_grid=data_grid, derive=derive,
        extra=extra)


def _bounded(p: Param, pair) -> Param:
    try:
        lower, upper = pair
    except (TypeError, ValueError):
        raise fail(f"bounds[{p.name!r}]", pair, "a pair (lower, upper)") from None
    lower = p.lower if lower is None else max(float(lower), p.lower)
    upper = p.upper if upper is None else min(float(upper), p.upper)
    if not lower < upper or (p.log and upper <= 0):
        raise fail(f"bounds[{p.name!r}]", pair, f"a range (lower < upper) within "
                   f"[{p.lower:g}, {p.upper:g}]")
    with np.errstate(divide="ignore"):
        lo, hi = (np.log(lower), np.log(upper)) if p.log else (lower, upper)
    inside = tuple(g for g in p.grid if lo <= g <= hi)
    if not inside:
        ends = [e for e in (lo, hi) if np.isfinite(e)]
        inside = (float(np.mean(ends)) if len(ends) == 2 else
                  float(ends[0] + (1.0 if np.isfinite(lo) else -1.0)),)
    return dataclasses.replace(p, lower=lower, upper=upper, grid=inside)
