"""What a fit's data can and cannot say: the diagnostics of :func:`~scalekit.fit.fit_law`.

Each check returns :class:`~scalekit.diagnostics.Diagnostic` objects (the codes
are documented in ``docs/diagnostics.md``):

* ``not_identified`` — a parameter the data cannot pin. Raised when its standard
  error is undefined (the objective is flat along it), when its interval spans
  more than a decade (``hi / lo > 10``), or when it needs an input to vary and
  that input varies less than :data:`MIN_SPAN` times over the data. Which input a
  parameter needs is found from the law itself: with the input held at its
  geometric mean, the parameter's column of the Jacobian falls into the span of
  the other columns (``A / N^alpha`` is then a constant that ``A`` alone can
  make, so ``alpha`` needs ``N`` to vary).
* ``on_bound`` — the estimate, or a tail of its bootstrap draws at least as
  large as the interval's tail, lies on a bound of the search range (a positive
  parameter more than :data:`BOUND_DECADES` decades below its estimate counts as
  on its bound 0).
* ``exponent_implausible`` — an exponent (a parameter named ``alpha…`` or
  ``beta…``) outside :data:`PLAUSIBLE_EXPONENT`.
* ``few_points`` — fewer than :data:`MIN_DOF` points beyond the number of
  parameters.
* ``not_converged`` — the optimiser, or some bootstrap resamples, failed.

``extrapolation`` is raised by the plans (:mod:`scalekit.fit._plans`) and
``outliers_dropped`` by :func:`~scalekit.fit.prepare_fit`.
"""

from __future__ import annotations

import re

import numpy as np

from scalekit.diagnostics import Diagnostic
from scalekit.fit._objective import log_jacobian
from scalekit.laws import Law

#: An input that varies less than this factor (max / min) cannot pin a parameter that needs it.
MIN_SPAN = 2.0
#: An interval whose ends differ by more than this factor does not pin its parameter.
MAX_INTERVAL_RATIO = 10.0
#: A positive parameter this many decades below (above) its estimate sits on its bound 0 (inf).
BOUND_DECADES = 6.0
#: Exponents of published scaling laws lie well inside this range (Kaplan et al. 2020 report
#: 0.05-0.1, Hoffmann et al. 2022 about 0.3; learning-curve exponents reach about 1).
PLAUSIBLE_EXPONENT = (0.02, 2.0)
#: Fewer residual degrees of freedom (points minus parameters) than this is few points.
MIN_DOF = 10
#: Relative residual below which a Jacobian column lies in the span of the others.
_COLLINEAR = 1e-6
_EXPONENT = re.compile(r"^(alpha|beta)(_\w+)?$")


def fit_diagnostics(law: Law, X, z: np.ndarray, stderr: np.ndarray, intervals: np.ndarray,
                    draws: np.ndarray | None, level: float, n_points: int) -> list[Diagnostic]:
    """Every identification check on one fit.

    Parameters
    ----------
    law : Law
    X : mapping of str to ndarray
        The law's inputs at the fitted points.
    z : ndarray (P,)
        Fitted parameters in the fitting space.
    stderr : ndarray (P,)
        Standard errors in natural units (NaN where undefined).
    intervals : ndarray (P, 2)
        The reported intervals, natural units.
    draws : ndarray (B, P) or None
        Bootstrap parameters, natural units.
    level : float
        Level of the intervals.
    n_points : int
    """
    theta = law.to_natural(z)
    found = few_points(law, n_points)
    found += not_identified(law, X, z, stderr, intervals)
    found += on_bound(law, theta, draws, level)
    found += exponent_implausible(law, theta)
    return found


def few_points(law: Law, n_points: int) -> list[Diagnostic]:
    """``few_points`` when the fit has fewer than :data:`MIN_DOF` residual degrees of freedom."""
    P = len(law.params)
    if n_points - P >= MIN_DOF:
        return []
    return [Diagnostic("few_points", "warning",
                       f"{n_points} points for {P} parameters leave {n_points - P} degrees of "
                       f"freedom (fewer than {MIN_DOF}): the intervals rest on little data; "
                       "add runs or fit a law with fewer parameters", value=n_points)]


def not_identified(law: Law, X, z: np.ndarray, stderr: np.ndarray,
                   intervals: np.ndarray) -> list[Diagnostic]:
    """``not_identified`` for every parameter the data cannot pin (see the module docstring)."""
    found = []
    spans = input_spans(X)
    needs = needed_inputs(law, X, z)
    for k, name in enumerate(law.param_names):
        lo, hi = intervals[k]
        short = [f"{col} spans only {spans[col]:.2g}x" for col in needs[name]
                 if spans.get(col, np.inf) < MIN_SPAN]
        if short:
            reason = (f"{' and '.join(short)} (max / min) and {name} needs it to vary; add "
                      f"runs spanning at least {MIN_SPAN:g}x (better 10x) or fix {name}")
        elif not np.isfinite(stderr[k]):
            reason = (f"the objective is flat along {name} (its standard error is undefined); "
                      f"fix {name} or add data that varies what it multiplies")
        elif lo > 0 and hi / lo > MAX_INTERVAL_RATIO:
            reason = (f"its interval [{lo:.3g}, {hi:.3g}] spans "
                      f"{np.log10(hi / lo):.1f} decades; add runs (more, larger or more varied) "
                      f"or fix {name}")
        else:
            continue
        found.append(Diagnostic("not_identified", "warning",
                                f"{name} is not identified by these data: {reason}",
                                param=name, value=float(law.to_natural(z)[k])))
    return found


def input_spans(X) -> dict[str, float]:
    """max / min of every strictly positive input (inputs with a value <= 0 are left out)."""
    spans = {}
    for name, column in X.items():
        column = np.asarray(column, dtype=float)
        if column.size and column.min() > 0:
            spans[name] = float(column.max() / column.min())
    return spans


def needed_inputs(law: Law, X, z: np.ndarray) -> dict[str, list[str]]:
    """For each parameter, the inputs it cannot be told apart without.

    An input is needed by a parameter when, with that input held at its
    geometric mean at every point, the parameter's Jacobian column lies in the
    span of the other columns (relative residual below 1e-6).
    """
    needs: dict[str, list[str]] = {name: [] for name in law.param_names}
    P = len(law.params)
    for column in X:
        values = np.asarray(X[column], dtype=float)
        if not values.size or values.min() <= 0 or P < 2:
            continue
        held = dict(X)
        held[column] = np.full_like(values, np.exp(np.mean(np.log(values))))
        J = log_jacobian(law, held, z)
        if not np.isfinite(J).all():
            continue
        for k, name in enumerate(law.param_names):
            target = J[:, k]
            others = np.delete(J, k, axis=1)
            norm = np.linalg.norm(target)
            if norm == 0:
                needs[name].append(column)
                continue
            coef, *_ = np.linalg.lstsq(others, target, rcond=None)
            if np.linalg.norm(target - others @ coef) < _COLLINEAR * norm:
                needs[name].append(column)
    return needs


def on_bound(law: Law, theta: np.ndarray, draws: np.ndarray | None,
             level: float) -> list[Diagnostic]:
    """``on_bound`` for an estimate, or an interval's tail of draws, on a search bound."""
    found = []
    tail = (1.0 - level) / 2.0
    for k, p in enumerate(law.params):
        at_estimate = _at_bound(p, theta[k], theta[k])
        share = 0.0
        if draws is not None and len(draws):
            share = float(np.mean(_at_bound(p, draws[:, k], theta[k])))
        if not (at_estimate or share >= tail):
            continue
        where = ("the estimate" if at_estimate else
                 f"{share:.0%} of the bootstrap draws (so an end of its interval)")
        found.append(Diagnostic(
            "on_bound", "warning",
            f"{p.name} = {theta[k]:.4g}: {where} sits on a bound of its search range "
            f"[{p.lower:g}, {p.upper:g}], so its interval is cut there; the data do not "
            f"bound {p.name} on that side: fix it, bound it, or add data", param=p.name,
            value=float(theta[k])))
    return found


def _at_bound(p, values, estimate: float):
    values = np.asarray(values, dtype=float)
    scale = max(abs(estimate), 1e-12)
    at = ~np.isfinite(values)
    for bound in (p.lower, p.upper):
        if np.isfinite(bound):
            at |= np.isclose(values, bound, rtol=1e-9, atol=1e-9 * scale)
    if p.log and p.lower <= 0 and estimate > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            decades = np.log10(values / estimate)
        at |= decades < -BOUND_DECADES
        if not np.isfinite(p.upper):
            at |= decades > BOUND_DECADES
    return at


def exponent_implausible(law: Law, theta: np.ndarray) -> list[Diagnostic]:
    """``exponent_implausible`` for an exponent outside :data:`PLAUSIBLE_EXPONENT`."""
    low, high = PLAUSIBLE_EXPONENT
    found = []
    for k, name in enumerate(law.param_names):
        if _EXPONENT.match(name) and not low <= theta[k] <= high:
            found.append(Diagnostic(
                "exponent_implausible", "warning",
                f"{name} = {theta[k]:.4g} lies outside {low:g}-{high:g}, where the exponents of "
                "published scaling laws lie; the data more likely fail to pin it than the law "
                f"is that steep or flat: check the not_identified notes, or bound {name}",
                param=name, value=float(theta[k])))
    return found
