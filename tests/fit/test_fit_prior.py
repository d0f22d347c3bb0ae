"""A normal prior in the fit engine: the posterior mode of a law that is linear in its
fitting space, against the closed form of ridge regression towards the prior's mean."""

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.fit import fit_law
from scalekit.laws import Law, Param

#: y = A x^-alpha: log y = ln A - alpha ln x, linear in (ln A, alpha).
POWER = Law(name="power", inputs=("x",),
            params=(Param("A", 0.0, np.inf, log=True), Param("alpha", -5.0, 5.0)),
            formula="A*x^-alpha",
            function=lambda X, t: t[..., :1] * np.asarray(X["x"]) ** -t[..., 1:2])


def _data():
    rng = np.random.default_rng(3)
    x = np.geomspace(1.0, 100.0, 30)
    return {"x": x}, 2.0 * x ** -0.3 * np.exp(rng.normal(0.0, 0.05, x.size))


def test_the_prior_gives_the_closed_form_posterior_mode_and_its_covariance():
    X, y = _data()
    mean, precision, variance = np.array([np.log(1.5), 0.5]), np.array([[2.0, 0.5], [0.5, 4.0]]), 100.0
    fit = fit_law(POWER, X, y, loss="squared", starts=[[0.0, 0.0]],
                  prior=(mean, precision, variance))
    J = np.c_[np.ones_like(y), -np.log(X["x"])]
    penalty = variance * precision
    want = np.linalg.solve(J.T @ J + penalty, J.T @ np.log(y) + penalty @ mean)
    got = np.array([np.log(fit.values["A"]), fit.values["alpha"]])
    np.testing.assert_allclose(got, want, rtol=1e-7)
    free = fit_law(POWER, X, y, loss="squared", starts=[[0.0, 0.0]])
    assert abs(free.values["alpha"] - fit.values["alpha"]) > 0.05     # the prior moved it
    r = np.log(y) - J @ want
    d = want - mean
    assert fit.stats["objective"] == pytest.approx(0.5 * r @ r, rel=1e-8)
    assert fit.stats["prior_penalty"] == pytest.approx(0.5 * d @ penalty @ d, rel=1e-6)
    bread = np.linalg.inv(J.T @ J + penalty)
    meat = len(y) / (len(y) - 2) * (J * r[:, None] ** 2).T @ J + variance * penalty
    np.testing.assert_allclose(fit.covariance, bread @ meat @ bread, rtol=1e-6)


def test_a_parameter_the_data_do_not_pin_keeps_the_priors_spread():
    """With the input all but constant (three values within 1e-6), alpha is not identified
    (ln A - alpha ln x is one number): its posterior standard deviation is the prior's,
    1 / sqrt(precision)."""
    rng = np.random.default_rng(4)
    X = {"x": np.tile([3.0, 3.000003, 3.000006], 14)[:40]}
    y = 2.0 * 3.0 ** -0.3 * np.exp(rng.normal(0.0, 0.05, 40))
    precision = np.diag([1e-6, 1.0 / 0.2 ** 2])
    fit = fit_law(POWER, X, y, loss="squared", starts=[[0.0, 0.0]],
                  prior=(np.array([0.0, 0.5]), precision, 0.05 ** 2))
    assert np.sqrt(fit.covariance[1, 1]) == pytest.approx(0.2, rel=0.05)
    assert fit.values["alpha"] == pytest.approx(0.5, abs=1e-4)   # the prior's mean


@pytest.mark.parametrize("prior, bootstrap", [((np.zeros(3), np.eye(3), 1.0), 0),
                                              ((np.zeros(2), np.array([[1.0, 2.0], [0.0, 1.0]]), 1.0), 0),
                                              ((np.zeros(2), np.eye(2), -1.0), 0),
                                              ((np.zeros(2), np.eye(2)), 0),
                                              ((np.zeros(2), np.eye(2), 1.0), 5)])
def test_a_bad_prior_is_refused(prior, bootstrap):
    X, y = _data()
    with pytest.raises(InputError, match="prior|bootstrap"):
        fit_law(POWER, X, y, starts=[[0.0, 0.0]], prior=prior, bootstrap=bootstrap)
