"""Gaussian process around a parametric mean, with the freeze-thaw decay kernel.

The GP models the residual of log loss about the parametric ensemble's median,
on ``t = x / x_last``. Its kernel is the exponential-decay kernel of Swersky,
Snoek and Adams (2014), "Freeze-thaw Bayesian optimization", eq. (6):
``k(t, t') = beta**alpha / (t + t' + beta)**alpha`` — the covariance of
functions that are mixtures of decaying exponentials ``exp(-lambda t)`` with a
Gamma(alpha, beta) prior on the decay rates — plus a constant kernel (the
residual settles at an unknown level) and white noise. Far beyond the data the
decaying part vanishes and the forecast returns to the mean plus the fitted
level; the forecast's spread adds the GP's posterior variance to the
ensemble's horizon-growing variance.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Hyperparameter, Kernel, WhiteKernel

from scalekit.checks import check_choice, check_number
from scalekit.surrogates._ensemble import ParametricEnsemble


class ExponentialDecay(Kernel):
    """Freeze-thaw kernel ``k(t, t') = beta**alpha / (t + t' + beta)**alpha`` for t >= 0.

    Parameters
    ----------
    alpha, beta : float
        Shape and rate of the Gamma prior on the decay rates (Swersky et al. 2014).
    alpha_bounds, beta_bounds : pair of float or "fixed"
        Bounds for hyperparameter optimisation.
    """

    def __init__(self, alpha=1.0, beta=1.0, alpha_bounds=(1e-2, 1e2), beta_bounds=(1e-3, 1e3)):
        self.alpha = alpha
        self.beta = beta
        self.alpha_bounds = alpha_bounds
        self.beta_bounds = beta_bounds

    @property
    def hyperparameter_alpha(self):
        return Hyperparameter("alpha", "numeric", self.alpha_bounds)

    @property
    def hyperparameter_beta(self):
        return Hyperparameter("beta", "numeric", self.beta_bounds)

    def __call__(self, X, Y=None, eval_gradient=False):
        X = np.atleast_2d(X)
        if np.any(X < 0):
            raise ValueError("ExponentialDecay needs non-negative inputs t")
        if Y is None:
            Y = X
        elif eval_gradient:
            raise ValueError("Gradient can only be evaluated when Y is None.")
        s = X[:, [0]] + np.atleast_2d(Y)[:, 0][None, :] + self.beta
        K = (self.beta / s) ** self.alpha
        if not eval_gradient:
            return K
        grads = []
        if not self.hyperparameter_alpha.fixed:   # d K / d log(alpha)
            grads.append(self.alpha * K * (np.log(self.beta) - np.log(s)))
        if not self.hyperparameter_beta.fixed:    # d K / d log(beta)
            grads.append(self.alpha * K * (1.0 - self.beta / s))
        gradient = np.stack(grads, axis=-1) if grads else np.empty(K.shape + (0,))
        return K, gradient

    def diag(self, X):
        X = np.atleast_2d(X)
        return (self.beta / (2.0 * X[:, 0] + self.beta)) ** self.alpha

    def is_stationary(self):
        return False

    def __repr__(self):
        return f"ExponentialDecay(alpha={self.alpha:.3g}, beta={self.beta:.3g})"


class GPSurrogate(ParametricEnsemble):
    """Parametric ensemble mean plus a GP on the residuals (freeze-thaw kernel).

    Parameters
    ----------
    restarts : int
        Extra random restarts of the GP's hyperparameter optimiser.
    seed : int
        Seed of those restarts.
    max_points : int
        The GP sees at most this many points, spread evenly in log x (the last
        always among them); the parametric mean sees every point.
    mean : {"curve", "asymptote"}
        The GP's mean function: the parametric curve itself (the GP models the
        residual structure), or only its asymptote, as in freeze-thaw, so that
        the decay kernel alone carries the curve towards it.
    Other parameters are those of :class:`ParametricEnsemble` (all but
    ``weighting``), which gives the mean; by default the saturating power law alone, so that the GP, not a
    mixture of families, accounts for the residual structure.

    Attributes
    ----------
    gp_ : GaussianProcessRegressor
        The fitted GP on residuals of log loss against ``t = x / x_last``.
    """

    _min_points = 5

    def __init__(self, *, families=("satpow",), holdout: float = 0.3, temperature: float = 1.0,
                 prior_rate: float = 0.02, prior_points: float = 2.0, interval_scale: float = 1.0,
                 mean: str = "curve", restarts: int = 0, seed: int = 0, max_points: int = 50,
                 direction: str = "minimize") -> None:
        super().__init__(families=families, holdout=holdout, temperature=temperature,
                         prior_rate=prior_rate, prior_points=prior_points,
                         interval_scale=interval_scale, direction=direction)
        self.mean = mean
        self.restarts = restarts
        self.seed = seed
        self.max_points = max_points

    def _fit(self, x, loss):
        check_number("restarts", self.restarts, low=0, integer=True)
        check_number("max_points", self.max_points, low=5, integer=True)
        check_choice("mean", self.mean, ("curve", "asymptote"))
        super()._fit(x, loss)
        resid = np.log(loss) - self._prior_mean(x)
        scale = max(float(np.std(resid)), 1e-4)
        kernel = (ConstantKernel(scale ** 2, (1e-8, 1.0)) * ExponentialDecay()
                  + ConstantKernel(scale ** 2, (1e-8, 1.0))
                  + WhiteKernel(scale ** 2, (1e-10, 1.0)))
        gp = GaussianProcessRegressor(kernel, normalize_y=False, n_restarts_optimizer=self.restarts,
                                      random_state=self.seed)
        keep = _thin(x, self.max_points)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp.fit((x[keep] / x[-1])[:, None], resid[keep])
        self.gp_ = gp
        self._noise = float(gp.kernel_.k2.noise_level)

    def _prior_mean(self, x):
        """The GP's mean function in log loss: the parametric curve, or its asymptote."""
        if self.mean == "asymptote":
            x = np.full_like(x, self.state_.x_last[0] * 1e8)
        means, weights, _ = super()._log_mixture(x)
        return (means * weights).sum(axis=1)

    def _log_mixture(self, x):
        means, weights, sd = super()._log_mixture(x)
        shift, std = self.gp_.predict((x / self.state_.x_last[0])[:, None], return_std=True)
        latent = np.maximum(std ** 2 - self._noise, 0.0)
        sd = np.sqrt(sd ** 2 + latent * self.interval_scale ** 2)
        if self.mean == "asymptote":
            return (self._prior_mean(x) + shift)[:, None], np.ones((x.size, 1)), sd
        return means + shift[:, None], weights, sd


def _thin(x: np.ndarray, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` points of sorted ``x``, evenly spread in log x."""
    if x.size <= limit:
        return np.arange(x.size)
    wanted = np.geomspace(x[0], x[-1], limit)
    return np.unique(np.r_[np.searchsorted(x, wanted).clip(0, x.size - 1), x.size - 1])
