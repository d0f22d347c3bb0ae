"""Split a K-way prediction into a tree of steps: the exact best tree of integer degrees.

Nadgir, Balasubramanian and Chaudhari, "How does chain of thought decompose
complex tasks?": a task with ``K`` answers can be answered in ``h`` steps, step
``i`` choosing among ``d_i`` options with ``prod d_i >= K``. If one step's error
is ``eps(d)`` (e.g. the capped power law of :mod:`scalekit.laws._class_count`)
and steps fail independently, the composed error is ``1 - prod (1 - eps(d_i))``.

Writing ``f(d) = -log(1 - eps(d)) / log d`` for the error "per nat of answers"
of a step of degree ``d``, every tree has ``-log(1 - error) = sum f(d_i) log d_i
>= f(d_c) log K`` with ``d_c = argmin f``: the *critical degree*. Splitting a
step into steps of degree below ``d_c`` raises the error; the best trees use
degrees near ``d_c`` and depth near ``log K / log d_c``, and no tree, however
deep, beats the error ``1 - K^-f(d_c)``.

The exact optimum over integer trees is found by dynamic programming on the
number of answers still to be told apart: after a step of degree ``d`` with
``n`` left, ``ceil(n / d)`` are left, and that recursion is exact because the
product of the remaining degrees is an integer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scalekit.checks import check_number
from scalekit.errors import InputError
from scalekit.laws import class_count_error
from scalekit.results import FlatResult

StepError = Callable[[np.ndarray], np.ndarray]

#: Largest class count the exact search accepts (its cost grows as K log K per level).
MAX_CLASSES = 100_000


@dataclass(frozen=True, repr=False)
class TreePlan(FlatResult):
    """The best tree of steps for ``classes`` answers.

    Attributes
    ----------
    classes : int
        ``K``.
    degrees : tuple of int
        Degrees of the best tree, largest first (the order does not change the error).
    depth : int
        Number of steps of the best tree.
    error : float
        Its composed error, the minimum over all integer trees.
    flat_error : float
        Error of answering in one step, ``eps(K)``.
    critical_degree : int
        ``d_c``: steps of lower degree cost more error per nat of answers.
    continuous_depth : float
        ``log K / log d_c``, the depth the critical degree suggests.
    error_bound : float
        ``1 - K^-f(d_c)``: no tree of any depth has a lower error.
    error_by_depth : list of float or None
        Least error among trees of exactly ``h`` steps, for ``h = 1, 2, ...`` (None
        where no tree of that depth exists).
    """

    classes: int
    degrees: tuple[int, ...]
    depth: int
    error: float
    flat_error: float
    critical_degree: int
    continuous_depth: float
    error_bound: float
    error_by_depth: list

    def _summary_title(self) -> str:
        return f"Least-error tree of steps for {self.classes} classes"

    def _summary_sections(self):
        return [("Best tree", [("degrees", " x ".join(map(str, self.degrees))),
                               ("depth", self.depth), ("error", self.error),
                               ("flat error (one step)", self.flat_error)]),
                ("Bounds", [("critical degree", self.critical_degree),
                            ("continuous depth", self.continuous_depth),
                            ("error bound (any depth)", self.error_bound)]),
                ("Least error by depth", [(f"depth {h}", e) for h, e in
                                          enumerate(self.error_by_depth, 1)])]

    def _repr_fields(self) -> dict:
        return {"classes": self.classes, "degrees": "x".join(map(str, self.degrees)),
                "error": self.error}


def step_error_from_law(values: Mapping[str, float]) -> StepError:
    """Step error ``eps(d)`` of a fitted ``class_count`` law (``c``, ``gamma``)."""
    c, gamma = float(values["c"]), float(values["gamma"])
    return lambda degree: class_count_error(degree, c, gamma)


def tree_error(degrees: Sequence[int], step_error: StepError) -> float:
    """Composed error ``1 - prod (1 - eps(d_i))`` of a tree with the given degrees."""
    degrees = np.asarray(degrees, dtype=float)
    return float(-np.expm1(np.sum(np.log1p(-step_error(degrees)))))


def critical_degree(step_error: StepError, classes: int) -> tuple[int, float]:
    """``d_c = argmin_d f(d)`` over ``2 <= d <= classes`` and ``f(d_c)``."""
    degrees = np.arange(2, classes + 1, dtype=float)
    per_nat = -np.log1p(-_checked(step_error, degrees)) / np.log(degrees)
    best = int(np.argmin(per_nat))
    return int(degrees[best]), float(per_nat[best])


def plan_tree(classes: int, step_error: StepError | Mapping[str, float], *,
              max_depth: int | None = None) -> TreePlan:
    """Exact least-error tree of steps for ``classes`` answers.

    Parameters
    ----------
    classes : int
        Number of answers ``K`` (2 to 100,000).
    step_error : callable or mapping
        ``eps(d)`` vectorised over integer degrees, or the values of a fitted
        ``class_count`` law.
    max_depth : int, optional
        Deepest tree considered; ``ceil(log2 K)`` (every tree that uses degrees of
        at least 2 without waste) by default.
    """
    classes = check_number("classes", classes, low=2, high=MAX_CLASSES, integer=True)
    if isinstance(step_error, Mapping):
        step_error = step_error_from_law(step_error)
    full_depth = int(np.ceil(np.log2(classes)))
    max_depth = full_depth if max_depth is None else check_number(
        "max_depth", max_depth, low=1, integer=True)
    degrees = np.arange(2, classes + 1)
    cost = -np.log1p(-_checked(step_error, degrees.astype(float)))  # cost[d - 2]
    # A degree of at least n leaves one answer; the cheapest such degree is a suffix minimum.
    suffix_best = np.minimum.accumulate(cost[::-1])[::-1]
    suffix_arg = _suffix_argmin(cost) + 2

    states = np.array(sorted(_ceil_quotients(classes)))  # every ceil(K / x); states[0] == 1
    # cost_by_depth[h][i]: least cost to tell states[i] answers apart in exactly h steps;
    # first_degree[h][i]: the degree of the first of those steps.
    cost_by_depth = [np.where(states == 1, 0.0, np.inf)]
    first_degree = [np.zeros(states.size, dtype=int)]
    for _ in range(max_depth):
        previous = cost_by_depth[-1]
        level = np.full(states.size, np.inf)
        picks = np.zeros(states.size, dtype=int)
        for i, n in enumerate(states[1:], start=1):
            # degrees 2 .. n-1 leave ceil(n / d) answers; any degree >= n leaves one
            d = degrees[: n - 2]
            total = np.append(cost[: n - 2] + previous[np.searchsorted(states, -(-n // d))],
                              suffix_best[n - 2] + previous[0])
            j = int(np.argmin(total))
            level[i] = total[j]
            picks[i] = d[j] if j < d.size else suffix_arg[n - 2]
        cost_by_depth.append(level)
        first_degree.append(picks)

    top = states.size - 1  # states[-1] == classes
    by_depth = [float(level[top]) for level in cost_by_depth[1:]]
    depth = int(np.argmin(by_depth)) + 1
    least = by_depth[depth - 1]
    tree, left = [], classes
    for h in range(depth, 0, -1):
        d = int(first_degree[h][np.searchsorted(states, left)])
        tree.append(d)
        left = -(-left // d)
    d_c, per_nat = critical_degree(step_error, classes)
    return TreePlan(
        classes=classes, degrees=tuple(sorted(tree, reverse=True)), depth=depth,
        error=float(-np.expm1(-least)), flat_error=float(step_error(np.array([float(classes)]))[0]),
        critical_degree=d_c, continuous_depth=float(np.log(classes) / np.log(d_c)),
        error_bound=float(-np.expm1(-per_nat * np.log(classes))),
        error_by_depth=[float(-np.expm1(-c)) if np.isfinite(c) else None for c in by_depth])


def _checked(step_error: StepError, degrees: np.ndarray) -> np.ndarray:
    errors = np.asarray(step_error(degrees), dtype=float)
    if errors.shape != degrees.shape or not np.all((errors >= 0) & (errors < 1)):
        raise InputError("`step_error` must return one error in [0, 1) for every degree "
                         f"2..{int(degrees[-1])}; it returned values from {errors.min():.3g} "
                         f"to {errors.max():.3g}" if errors.shape == degrees.shape else
                         "`step_error` must return one error per degree (a vectorised function)")
    return errors


def _suffix_argmin(values: np.ndarray) -> np.ndarray:
    """Index of the minimum of ``values[i:]`` for each ``i`` (the first one on ties)."""
    out = np.empty(values.size, dtype=int)
    best = values.size - 1
    for i in range(values.size - 1, -1, -1):
        if values[i] <= values[best]:
            best = i
        out[i] = best
    return out


def _ceil_quotients(n: int) -> set[int]:
    """Every value of ``ceil(n / x)`` for integers ``x >= 1`` (O(sqrt n) of them)."""
    values = set()
    x = 1
    while x <= n:
        q = -(-n // x)
        values.add(q)
        if q == 1:
            break
        # the largest x with the same ceil(n / x) = q is floor((n - 1) / (q - 1))
        x = (n - 1) // (q - 1) + 1
    return values
