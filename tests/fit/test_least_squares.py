"""The batched least-squares solver against scipy's least_squares on M4 problems."""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from scalekit.fit._least_squares import least_squares_batch
from scalekit.laws._m4 import M4, limit_terms, to_limit


def _problems():
    """Synthetic M4 curves with a known truth (interior optima), 0.3% log-normal noise."""
    rng = np.random.default_rng(3)
    x = np.geomspace(1e3, 1e6, 40)
    truths = np.array([[1.5, 4.0, 0.6, np.log(30.0), 0.4], [0.8, 3.0, 1.5, np.log(90.0), 0.5],
                       [2.0, 6.0, 0.3, np.log(20.0), 0.3]])
    log_y = M4.log_predict_fitting({"x": x}, truths) + rng.normal(0, 0.003, (3, x.size))
    starts = truths[:, None, :] * rng.uniform(0.8, 1.25, (3, 4, 5))
    return x, truths, log_y, starts


def test_solver_reaches_scipys_optimum_on_m4():
    x, truths, log_y, starts = _problems()
    S = starts.shape[1]
    rows = np.repeat(np.arange(3), S)
    lower, upper = M4.fitting_bounds()
    lower = np.broadcast_to(lower, (3 * S, 5))
    upper = np.broadcast_to(upper, (3 * S, 5))

    def evaluate(z, which):
        log_l, J = M4.log_value_and_jacobian({"x": np.tile(x, (len(which), 1))}, z)
        return log_l - log_y[rows[which]], J

    fit = least_squares_batch(evaluate, starts.reshape(-1, 5), lower, upper)
    assert fit.converged.all() and fit.iterations.max() < 300
    for i in range(3):
        def residuals(z, i=i):
            return M4.log_predict_fitting({"x": x}, z) - log_y[i]

        def jacobian(z):
            return M4.log_value_and_jacobian({"x": x}, z)[1]

        ref = least_squares(residuals, truths[i], jac=jacobian, bounds=M4.fitting_bounds(),
                            ftol=1e-15, xtol=1e-15, gtol=1e-15, x_scale="jac")
        best = 0.5 * float(ref.fun @ ref.fun)
        ours = fit.objective[rows == i]
        # every start reaches the optimum scipy finds from the truth
        np.testing.assert_allclose(ours, best, rtol=1e-9)
        np.testing.assert_allclose(fit.z[rows == i], np.tile(ref.x, (S, 1)), rtol=1e-4)
        # and the optimum is near the truth (the noise is small)
        np.testing.assert_allclose(ref.x, truths[i], rtol=0.5)


def test_limit_coordinates_give_m4_and_its_jacobian():
    x = np.tile(np.geomspace(10.0, 1e4, 9), (3, 1))
    z = np.array([[1.5, 4.0, 0.6, np.log(30.0), 0.4], [0.8, 30.0, 3.0, -5.0, 0.5],
                  [2.0, 6.0, 0.3, np.log(20.0), 0.3]])
    w = to_limit(z)
    log_l, J, _ = limit_terms(x, w)
    np.testing.assert_allclose(log_l, M4.log_predict_fitting({"x": x[0]}, z), rtol=1e-12)
    for j in range(5):
        h = 1e-6 * (1.0 + np.abs(w[:, j:j + 1]))
        up, down = w.copy(), w.copy()
        up[:, j:j + 1] += h
        down[:, j:j + 1] -= h
        central = (limit_terms(x, up)[0] - limit_terms(x, down)[0]) / (2 * h)
        np.testing.assert_allclose(J[..., j], central, rtol=1e-5, atol=1e-8)


def test_limit_jacobian_where_m4_saturates_at_l0():
    """alpha = 0: L = min(Linf + beta x^-c, L0), flat in beta and c where it sits at L0."""
    x = np.geomspace(10.0, 1e4, 9)[None, :]
    w = to_limit(np.array([[1.0, 3.0, 0.0, np.log(10.0), 0.5]]))
    log_l, J, _ = limit_terms(x, w)
    saturated = 1.0 + 10.0 * x[0] ** -0.5 >= 3.0
    assert saturated.any() and not saturated.all()
    np.testing.assert_allclose(log_l[0, saturated], np.log(3.0))
    np.testing.assert_allclose(J[0, saturated][:, [0, 3, 4]], 0.0, atol=1e-12)
    for j in (0, 1, 3, 4):
        up, down = w.copy(), w.copy()
        up[0, j] += 1e-7
        down[0, j] -= 1e-7
        central = (limit_terms(x, up)[0] - limit_terms(x, down)[0]) / 2e-7
        np.testing.assert_allclose(J[..., j], central, rtol=1e-5, atol=1e-7)
    # an alpha that underflows (u = inf) gives the alpha = 0 law and a finite Jacobian
    tiny = w.copy()
    tiny[0, 2] = 1e-320
    log_tiny, J_tiny, _ = limit_terms(x, tiny)
    np.testing.assert_allclose(log_tiny, log_l, rtol=1e-12)
    np.testing.assert_allclose(J_tiny[..., [0, 1, 3, 4]], J[..., [0, 1, 3, 4]], atol=1e-12)
