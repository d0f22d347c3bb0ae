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


def test_the_prior_gives_the_closed_form_posterior_mode_and_its_curvature():
    X, y = _data()
    mean, precision = np.array([np.log(1.5), 0.5]), np.array([[200.0, 50.0], [50.0, 400.0]])
    fit = fit_law(POWER, X, y, loss="squared", starts=[[0.0, 0.0]], prior=(mean, precision))
    J = np.c_[np.ones_like(y), -np.log(X["x"])]
    want = np.linalg.solve(J.T @ J + precision, J.T @ np.log(y) + precision @ mean)
    got = np.array([np.log(fit.values["A"]), fit.values["alpha"]])
    np.testing.assert_allclose(got, want, rtol=1e-7)
    free = fit_law(POWER, X, y, loss="squared", starts=[[0.0, 0.0]])
    assert abs(free.values["alpha"] - fit.values["alpha"]) > 0.05     # the prior moved it
    r = np.log(y) - J @ want
    d = want - mean
    assert fit.stats["objective"] == pytest.approx(0.5 * r @ r, rel=1e-8)
    assert fit.stats["prior_penalty"] == pytest.approx(0.5 * d @ precision @ d, rel=1e-6)
    bread = np.linalg.inv(J.T @ J + precision)
    sandwich = len(y) / (len(y) - 2) * bread @ ((J * r[:, None] ** 2).T @ J) @ bread
    np.testing.assert_allclose(fit.covariance, sandwich, rtol=1e-6)


@pytest.mark.parametrize("prior, bootstrap", [((np.zeros(3), np.eye(3)), 0),
                                              ((np.zeros(2), np.array([[1.0, 2.0], [0.0, 1.0]])), 0),
                                              ((np.zeros(2), np.eye(2)), 5)])
def test_a_bad_prior_is_refused(prior, bootstrap):
    X, y = _data()
    with pytest.raises(InputError, match="prior|bootstrap"):
        fit_law(POWER, X, y, starts=[[0.0, 0.0]], prior=prior, bootstrap=bootstrap)
