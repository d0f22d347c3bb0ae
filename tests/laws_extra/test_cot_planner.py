"""Chain-of-thought tree planner (Nadgir, Balasubramanian & Chaudhari) against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.laws._class_count import class_count_error
from scalekit.planners._cot import critical_degree, plan_tree, tree_error

STEP_ERRORS = {
    "linear": lambda d: class_count_error(d, 0.01, 1.0),
    "steep": lambda d: class_count_error(d, 0.002, 2.0),
    "shallow": lambda d: class_count_error(d, 0.05, 0.3),
    "bumpy": lambda d: np.minimum(0.03 * d ** 0.8 * (1.0 + 0.5 * np.sin(d)), 1 - 1 / d),
}


def brute_force(K, step_error):
    """Least error over every sequence of degrees 2..K whose product first reaches K at its end."""
    best = (math.inf, None)

    def extend(prefix, product):
        nonlocal best
        for d in range(2, K + 1):
            if product * d >= K:
                err = tree_error(prefix + [d], step_error)
                if err < best[0]:
                    best = (err, prefix + [d])
            else:
                extend(prefix + [d], product * d)

    extend([], 1)
    return best


@pytest.mark.parametrize("name", sorted(STEP_ERRORS))
@pytest.mark.parametrize("K", [2, 3, 7, 12, 30, 64])
def test_exact_optimum_equals_brute_force(name, K):
    step_error = STEP_ERRORS[name]
    plan = plan_tree(K, step_error)
    best, _ = brute_force(K, step_error)
    assert plan.error == pytest.approx(best, rel=1e-12, abs=1e-15)
    assert math.prod(plan.degrees) >= K
    assert tree_error(plan.degrees, step_error) == pytest.approx(plan.error, rel=1e-12)
    assert plan.depth == len(plan.degrees)
    assert plan.error_by_depth[plan.depth - 1] == pytest.approx(plan.error)
    assert min(e for e in plan.error_by_depth if e is not None) == pytest.approx(plan.error)


@pytest.mark.parametrize("K", [10, 100, 1000, 4096])
def test_no_tree_beats_the_bound_and_best_is_near_it(K):
    step_error = STEP_ERRORS["linear"]
    plan = plan_tree(K, step_error)
    assert plan.error_bound <= plan.error + 1e-15
    assert plan.error <= plan.flat_error
    # a uniform tree of the critical degree, where it divides K, reaches the bound
    d_c = plan.critical_degree
    h = round(math.log(K) / math.log(d_c))
    if d_c ** h == K:
        assert plan.error == pytest.approx(plan.error_bound, rel=1e-9)


def test_critical_degree_minimises_error_per_nat():
    step_error = STEP_ERRORS["steep"]
    d_c, per_nat = critical_degree(step_error, 500)
    ds = np.arange(2, 501, dtype=float)
    direct = -np.log1p(-step_error(ds)) / np.log(ds)
    assert d_c == int(ds[np.argmin(direct)]) and per_nat == pytest.approx(direct.min())
    # below the critical degree splitting a step raises the error: d_c beats d' * d'' = d_c^2
    assert tree_error([d_c, d_c], step_error) < tree_error([d_c ** 2], step_error)


def test_flat_is_best_when_error_does_not_grow_with_classes():
    plan = plan_tree(50, lambda d: np.full(np.shape(d), 0.1))
    assert plan.degrees == (50,) or (len(plan.degrees) == 1 and plan.degrees[0] >= 50)
    assert plan.error == pytest.approx(0.1)


def test_bad_input():
    with pytest.raises(InputError, match="classes"):
        plan_tree(1, STEP_ERRORS["linear"])
    with pytest.raises(InputError, match="step_error"):
        plan_tree(10, lambda d: np.full(np.shape(d), 1.5))
