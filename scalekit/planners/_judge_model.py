"""The LLM-as-a-judge model: Bayesian linear regression, k samples, a reward-weighted pick.

Halder and Pehlevan, "Demystifying LLM-as-a-judge: an analytically tractable
model for inference-time scaling". A teacher ``y = x . w_T + sigma eps`` gives
``n_train`` examples; a Bayesian linear regression with a Gaussian prior turns
them into a posterior predictive ``N(m(x), s(x)^2)`` at a test input. At
inference, ``k`` outputs are drawn from that predictive and one is chosen with
probability ``softmax(r / T)`` over the quadratic reward ``r = -(y - y_R)^2``
of a judge whose target ``y_R = x . w_R`` may differ from the teacher's
(misspecification). The error is ``E (y_chosen - x . w_T)^2``.

This module draws the predictives and holds the closed forms; the simulators
are in :mod:`scalekit.planners._judge_selection`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from scalekit.checks import check_number


@dataclass(frozen=True)
class JudgeModel:
    """Settings of the teacher, the learner and the judge.

    Attributes
    ----------
    dim : int
        Input dimension ``d``; inputs are ``N(0, I / d)``.
    n_train : int
        Training examples.
    noise : float
        Teacher's noise ``sigma`` (the learner knows it).
    prior_var : float
        Variance of the Gaussian prior on each weight; the teacher's weights are
        drawn from the same prior.
    misspecification : float
        The judge's weights are ``w_R = w_T + misspecification * g`` with
        ``g ~ N(0, I)``; 0 makes the judge the teacher.
    n_test : int
        Test inputs the error is averaged over.
    seed : int
        Seed of the one generator every draw goes through.
    """

    dim: int = 40
    n_train: int = 80
    noise: float = 0.5
    prior_var: float = 1.0
    misspecification: float = 0.0
    n_test: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        check_number("dim", self.dim, low=1, integer=True)
        check_number("n_train", self.n_train, low=0, integer=True)
        check_number("noise", self.noise, low=0, low_open=True)
        check_number("prior_var", self.prior_var, low=0, low_open=True)
        check_number("misspecification", self.misspecification, low=0)
        check_number("n_test", self.n_test, low=1, integer=True)
        check_number("seed", self.seed, low=0, integer=True)

    def to_dict(self) -> dict:
        return asdict(self)

    def draw(self) -> Predictive:
        """Draw the teacher, the training set, the judge and the test inputs."""
        rng = np.random.default_rng(self.seed)
        d = self.dim
        w_teacher = rng.normal(0.0, np.sqrt(self.prior_var), d)
        w_judge = w_teacher + self.misspecification * rng.normal(0.0, 1.0, d)
        X_test = rng.normal(0.0, 1.0 / np.sqrt(d), (self.n_test, d))
        # separate streams: a larger n_train extends the smaller training set
        inputs_rng, noise_rng = rng.spawn(2)
        X = inputs_rng.normal(0.0, 1.0 / np.sqrt(d), (self.n_train, d))
        y = X @ w_teacher + self.noise * noise_rng.normal(0.0, 1.0, self.n_train)
        precision = X.T @ X / self.noise ** 2 + np.eye(d) / self.prior_var
        covariance = np.linalg.inv(precision)
        w_mean = covariance @ (X.T @ y) / self.noise ** 2
        variance = np.einsum("ij,jk,ik->i", X_test, covariance, X_test) + self.noise ** 2
        return Predictive(mean=X_test @ w_mean, std=np.sqrt(variance),
                          target=X_test @ w_teacher, reward_target=X_test @ w_judge)


@dataclass(frozen=True)
class Predictive:
    """Per test input: predictive mean ``m`` and std ``s``, teacher ``t``, judge ``y_R``."""

    mean: np.ndarray
    std: np.ndarray
    target: np.ndarray
    reward_target: np.ndarray

    @property
    def bias(self) -> np.ndarray:
        """``b = m - t``, the predictive mean's error."""
        return self.mean - self.target


def error_one_sample(predictive: Predictive) -> float:
    """Closed form for k = 1 (or T -> infinity): ``E[b^2 + s^2]``."""
    return float(np.mean(predictive.bias ** 2 + predictive.std ** 2))


def error_many_samples(predictive: Predictive, temperature: float) -> float:
    """Closed form for k -> infinity at ``T > 0``.

    The chosen output then follows the predictive tilted by ``exp(-(y - y_R)^2 / T)``,
    a Gaussian of precision ``1/s^2 + 2/T`` and mean
    ``(m/s^2 + 2 y_R/T) / (1/s^2 + 2/T)``; the error is its squared bias plus variance.
    """
    check_number("temperature", temperature, low=0, low_open=True)
    s2 = predictive.std ** 2
    precision = 1.0 / s2 + 2.0 / temperature
    mean = (predictive.mean / s2 + 2.0 * predictive.reward_target / temperature) / precision
    return float(np.mean((mean - predictive.target) ** 2 + 1.0 / precision))


def best_of_k_asymptote(predictive: Predictive, k) -> np.ndarray:
    """Best-of-k with the teacher as judge, for large k: ``(pi / k^2) E[s^2 exp(b^2 / s^2)]``.

    The distance of the closest of k draws to the teacher is nearly exponential
    with rate ``2 k p(t)``, ``p(t)`` the predictive density at the teacher's
    output (extreme value theory), so its mean square is ``1 / (2 k^2 p(t)^2)``.
    Valid when the judge is the teacher (``misspecification = 0``).
    """
    k = np.asarray(k, dtype=float)
    s2 = predictive.std ** 2
    return np.pi / k ** 2 * float(np.mean(s2 * np.exp(predictive.bias ** 2 / s2)))
