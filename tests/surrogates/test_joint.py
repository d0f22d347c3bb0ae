"""Joint sweep law: recovers a Chinchilla-form truth, lets a barely started run borrow shape."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.surrogates._ensemble import ParametricEnsemble
from scalekit.surrogates._joint import JointSurrogate

SIZES = np.array([1e7, 3e7, 1e8, 3e8, 1e9])
E, A, ALPHA, B, BETA = 1.7, 400.0, 0.34, 2000.0, 0.28


def law(n, d):
    return E + A * n ** -ALPHA + B * d ** -BETA


def _sweep(lengths, seed=0, noise=0.003):
    rng = np.random.default_rng(seed)
    xs, ys, runs, sizes = [], [], [], []
    for i, (n, k) in enumerate(zip(SIZES, lengths, strict=True)):
        d = np.geomspace(1e8, 1e11, 40)[:k]
        xs.append(d)
        ys.append(law(n, d) * np.exp(rng.normal(0, noise, k)))
        runs += [f"r{i}"] * k
        sizes += [n] * k
    return np.concatenate(xs), np.concatenate(ys), np.array(runs), np.array(sizes)


@pytest.mark.parametrize("tied", [True, False])
def test_recovers_the_data_exponent(tied):
    x, y, runs, sizes = _sweep([40, 40, 40, 40, 40])
    model = JointSurrogate().fit(x, y, runs=runs, sizes=sizes if tied else None)
    assert model.params_["beta"] == pytest.approx(BETA, rel=0.1)
    if tied:
        assert model.params_["alpha"] == pytest.approx(ALPHA, rel=0.25)


def test_barely_started_run_borrows_strength():
    """A run with 3 points: forecast 1000x further within 2%; per-curve surrogates cannot fit it."""
    x, y, runs, sizes = _sweep([40, 40, 40, 30, 3])
    model = JointSurrogate().fit(x, y, runs=runs, sizes=sizes)
    truth = law(SIZES[4], 1e11)
    q = model.predict_quantiles([1e11], [0.05, 0.5, 0.95], runs="r4")[0]
    assert q[1] == pytest.approx(truth, rel=0.02)
    assert q[0] <= truth <= q[2]
    with pytest.raises(InputError):
        ParametricEnsemble().fit(x[runs == "r4"], y[runs == "r4"])


def test_intervals_grow_with_the_horizon():
    x, y, runs, sizes = _sweep([40, 40, 30, 20, 10])
    model = JointSurrogate().fit(x, y, runs=runs, sizes=sizes)
    q = model.predict_quantiles([1e10, 1e11, 1e12], [0.1, 0.9], runs="r4")
    widths = np.log(q[:, 1] / q[:, 0])
    assert np.all(np.diff(widths) > 0)


def test_bad_input():
    x, y, runs, sizes = _sweep([40, 40, 40, 40, 40])
    model = JointSurrogate().fit(x, y, runs=runs)
    with pytest.raises(InputError, match="not among the runs"):
        model.predict([1e11], runs="elsewhere")
    with pytest.raises(InputError, match="one entry per point"):
        JointSurrogate().fit(x, y, runs=runs[:-1])
    with pytest.raises(InputError, match="finite and positive"):
        JointSurrogate().fit(np.r_[x[:-1], np.nan], y, runs=runs)
    with pytest.raises(InputError, match="more points than runs"):
        JointSurrogate().fit([1.0, 2.0, 3.0], [3.0, 2.0, 1.5], runs=["a", "b", "c"])


def test_maximize_accepts_a_score_of_zero():
    """Scores forecast as the error 1 - y: a score of 0 at the first point is valid input."""
    d = np.geomspace(1e8, 1e11, 30)
    runs, xs, ys = [], [], []
    for i, level in enumerate((0.1, 0.15, 0.2)):
        err = level + (1 - level) * (d / 1e8) ** -0.3
        xs.append(d[:20])
        ys.append(1 - err[:20])
        runs += [f"r{i}"] * 20
    x, y = np.concatenate(xs), np.concatenate(ys)
    assert y.min() == 0.0
    model = JointSurrogate(direction="maximize").fit(x, y, runs=runs)
    truth = 1 - (0.1 + 0.9 * (1e11 / 1e8) ** -0.3)
    assert model.predict([1e11], runs="r0")[0] == pytest.approx(truth, abs=0.02)
