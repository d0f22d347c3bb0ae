"""Properties of the budget rounding and the batched parabola fits (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scalekit.isoflop import assign_budgets, round_significant
from scalekit.isoflop._parabolas import Groups, fit_parabolas, vertices

positive = st.floats(min_value=1e10, max_value=1e26, allow_nan=False)


@given(st.lists(positive, min_size=1, max_size=20), st.integers(1, 4))
def test_rounding_is_idempotent_and_close(values, figures):
    once = round_significant(values, figures)
    assert np.array_equal(round_significant(once, figures), once)
    assert np.all(np.abs(once / np.asarray(values) - 1) <= 0.5 * 10.0 ** (1 - figures) + 1e-12)


@given(st.lists(positive, min_size=1, max_size=20), st.floats(0.01, 0.5))
def test_nominal_budgets_are_within_tolerance(values, tolerance):
    nominal = [1e12, 1e15, 1e18, 1e21, 1e24]
    got = assign_budgets(values, nominal=nominal, tolerance=tolerance)
    kept = np.isfinite(got.budget)
    distance = np.abs(np.log10(np.asarray(values)[kept]) - np.log10(got.budget[kept]))
    assert np.all(distance <= tolerance + 1e-12)
    assert got.n_left_out == int((~kept).sum())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(15, 25), st.floats(0.05, 2.0), st.floats(2.0, 5.0),
                          st.integers(3, 12), st.floats(0.5, 3.0)), min_size=1, max_size=6))
def test_exact_parabolas_give_their_vertex(profiles):
    xs, ys, codes = [], [], []
    for k, (vertex, curvature, floor, n, half_width) in enumerate(profiles):
        x = np.linspace(vertex - half_width, vertex + 0.7 * half_width, n)
        xs.append(x)
        ys.append(floor + curvature * (x - vertex) ** 2)
        codes.append(np.full(n, k))
    x, y = np.concatenate(xs), np.concatenate(ys)
    groups = Groups.from_sorted_codes(np.concatenate(codes))
    x_star, y_star = vertices(fit_parabolas(x, y, groups), x, groups)
    assert np.allclose(x_star, [p[0] for p in profiles], atol=1e-7)
    assert np.allclose(y_star, [p[2] for p in profiles], atol=1e-8)
