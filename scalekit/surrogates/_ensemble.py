"""Weighted ensemble of parametric families, weighted by how well each forecasts.

Each curve's observed prefix is split in log x: the last ``holdout`` share of
its log-x span is hidden, every family is fitted to the rest and scored by the
mean squared log error of its forecast of the hidden tail, each point weighted
by its squared horizon ``ln(x / x_cut)`` so the longest reach counts most (the
horizon weights of one curve sum to 1). Weights are
``exp(-(score - best) / (2 * temperature * (best + sigma**2)))``, so families
about as good as the best share the weight; with ``weighting="equal"`` every
family whose backtest forecast is finite weighs the same (a plain model average,
which suits curves whose prefix says little about their tail). The families are then refitted to
the whole prefix; the forecast is the mixture of their curves (in log loss) with
a standard deviation that grows with the horizon at the rate the same backtest
measured (:func:`scalekit.surrogates._base.horizon_rate`). Nothing here looks at
points beyond the prefix. The backtest idea follows Domhan et al. (2015), who
weight families by likelihood; scoring on held-back tail points rewards
extrapolation rather than interpolation.

Fallbacks (documented, never NaN): a curve with fewer than ``min_fit + 1``
points gets equal weights over the families with fewer parameters than points
and the prior growth rate; where no family gives a finite positive forecast,
the forecast is the last observed loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scalekit.checks import check_choice, check_number, fail
from scalekit.surrogates._base import Surrogate, horizon_rate, mixture_quantiles
from scalekit.surrogates._curve_families import DEFAULT_FAMILIES, FAMILIES, FamilyFit, fit_family

WEIGHTINGS = ("backtest", "equal")


def backtest_masks(x: np.ndarray, mask: np.ndarray, *, holdout: float, min_fit: int):
    """Split each padded curve's points into a fitted head and a held-back tail.

    Returns ``head`` (B, n), ``tail`` (B, n) and ``has_tail`` (B,). The tail is the
    last ``holdout`` share of the log-x span, moved so the head keeps at least
    ``min_fit`` points; rows too short for both keep every point in the head.
    """
    lx = np.log(np.where(mask, x, 1.0))
    first = np.where(mask, lx, np.inf).min(axis=1)
    last = np.where(mask, lx, -np.inf).max(axis=1)
    cut = first + (1.0 - holdout) * (last - first)
    head = mask & (lx <= cut[:, None] + 1e-12)
    rank = np.cumsum(mask, axis=1)
    head |= mask & (rank <= min_fit)
    tail = mask & ~head
    has_tail = tail.any(axis=1) & (head.sum(axis=1) >= min_fit)
    head = np.where(has_tail[:, None], head, mask)
    tail &= has_tail[:, None]
    return head, tail, has_tail


@dataclass(frozen=True)
class EnsembleState:
    """Fitted ensemble for B curves: one fit per family, weights, noise model."""

    fits: tuple[FamilyFit, ...]
    weights: np.ndarray      # (B, K)
    sigma: np.ndarray        # (B,) scatter of the points about the fits, log units
    rate: np.ndarray         # (B,) growth of the forecast error per e-fold of x
    x_last: np.ndarray       # (B,)
    y_last: np.ndarray       # (B,)
    interval_scale: float = 1.0

    def log_mixture(self, x_new: np.ndarray):
        """Means (B, m, K), weights (B, m, K) and sd (B, m) of log loss at ``x_new`` (B, m)."""
        x_new = np.asarray(x_new, dtype=float)
        preds = np.stack([fit.predict(x_new) for fit in self.fits], axis=-1)
        valid = np.isfinite(preds)
        w = np.where(valid, self.weights[:, None, :], 0.0)
        total = w.sum(axis=-1, keepdims=True)
        fallback = total[..., 0] <= 0
        means = np.log(np.where(valid, preds, 1.0))
        means = np.where(fallback[..., None], np.log(self.y_last)[:, None, None], means)
        w = np.where(fallback[..., None], 1.0 / len(self.fits), w / np.where(total > 0, total, 1.0))
        h = np.maximum(np.log(x_new / self.x_last[:, None]), 0.0)
        sd = np.sqrt(self.sigma[:, None] ** 2 + (self.rate[:, None] * h) ** 2) * self.interval_scale
        return means, w, np.maximum(sd, 1e-6)

    def quantiles(self, x_new: np.ndarray, qs: np.ndarray) -> np.ndarray:
        """Quantiles (B, m, Q) of the forecast at ``x_new`` (B, m), in units of loss."""
        means, weights, sd = self.log_mixture(x_new)
        return np.exp(mixture_quantiles(means, weights, sd, np.asarray(qs, dtype=float)))


def fit_ensemble(x: np.ndarray, y: np.ndarray, mask: np.ndarray, *,
                 weighting: str = "backtest", **settings) -> EnsembleState:
    """Fit the ensemble to B padded curves at once (see the module docstring).

    ``settings`` are those of :func:`fit_ensembles`; this is its one-weighting case.
    """
    return fit_ensembles(x, y, mask, weightings=(weighting,), **settings)[0]


def fit_ensembles(x: np.ndarray, y: np.ndarray, mask: np.ndarray, *,
                  families: Sequence[str] | None = None, weightings: Sequence[str] = ("backtest",),
                  holdout: float = 0.3, temperature: float = 1.0, prior_rate: float = 0.02,
                  prior_points: float = 2.0, min_fit: int = 5, interval_scale: float = 1.0,
                  pool: bool = False) -> tuple[EnsembleState, ...]:
    """The ensemble of B padded curves under each weighting, the families fitted once.

    The families' fits and backtest scores do not depend on the weighting, so
    the ensembles ``"backtest"`` and ``"equal"`` of the same curves share them;
    each state equals the one fitted alone. With ``pool`` the B curves are taken
    as one sweep: each family's backtest scores are averaged over the curves,
    and every curve gets the same weights, as sharp as the evidence of B curves
    allows (``_pooled_weights``). The points of a row may come in any order
    (they are sorted by x, padding last).
    """
    families = _check_families(families)
    for weighting in weightings:
        check_choice("weighting", weighting, WEIGHTINGS)
    x, y, mask = np.asarray(x, float), np.asarray(y, float), np.asarray(mask, bool)
    order = np.argsort(np.where(mask, x, np.inf), axis=1, kind="stable")
    x, y, mask = (np.take_along_axis(a, order, axis=1) for a in (x, y, mask))
    head, tail, has_tail = backtest_masks(x, mask, holdout=holdout, min_fit=min_fit)
    n_points = mask.sum(axis=1)
    rows = np.arange(x.shape[0])
    idx = np.arange(x.shape[1])
    last = np.where(mask, idx, -1).max(axis=1)
    x_cut = x[rows, np.where(head, idx, -1).max(axis=1)]
    log_y = np.log(np.where(mask, y, 1.0))

    horizons = np.where(tail, np.log(np.where(tail, x, 1.0) / x_cut[:, None]), 0.0)
    reach = horizons ** 2 / np.maximum((horizons ** 2).sum(axis=1, keepdims=True), 1e-300)
    fits, scores, errors, rms = [], [], [], []
    for name in families:
        family = FAMILIES[name]
        usable = n_points > family.n_params
        back = fit_family(family, x, y, head)
        err = np.log(back.predict(x)) - log_y
        err = np.where(tail, err, 0.0)
        score = np.where(tail, reach * err ** 2, 0.0).sum(axis=1)
        score = np.where(np.isfinite(score) & usable, score, np.inf)
        full = fit_family(family, x, y, mask, start=back.start)
        full = FamilyFit(full.family, full.theta, full.scale, full.rms, full.ok & usable)
        fits.append(full)
        scores.append(score)
        errors.append(err)
        rms.append(np.where(full.ok, full.rms, np.inf))
    scores = np.stack(scores, axis=1)                 # (B, K)
    rms = np.stack(rms, axis=1)
    usable = np.isfinite(rms)
    best_rms = np.min(np.where(usable, rms, np.inf), axis=1)
    sigma0 = np.where(np.isfinite(best_rms), best_rms, 0.0)
    errs = np.stack(errors, axis=-1)                  # (B, n, K)
    fin = np.isfinite(errs)
    states = []
    for weighting in weightings:
        weights = _weights(scores, sigma0, has_tail, usable, temperature=temperature,
                           pool=pool, weighting=weighting)
        sigma = np.sqrt(np.where(usable, weights * np.where(usable, rms, 0.0) ** 2,
                                 0.0).sum(axis=1))
        w_err = np.where(fin, weights[:, None, :], 0.0)
        ens_err = (np.where(fin, errs, 0.0) * w_err).sum(-1) / np.maximum(w_err.sum(-1), 1e-300)
        rate = horizon_rate(ens_err, horizons, tail & (w_err.sum(-1) > 0), sigma,
                            prior_rate=prior_rate, prior_points=prior_points)
        states.append(EnsembleState(tuple(fits), weights, sigma, rate, x[rows, last],
                                    y[rows, last], interval_scale))
    return tuple(states)


def _weights(scores: np.ndarray, sigma0: np.ndarray, has_tail: np.ndarray, usable: np.ndarray,
             *, temperature: float, pool: bool, weighting: str) -> np.ndarray:
    """The families' weights (B, K) from their backtest scores (module docstring)."""
    best = np.min(scores, axis=1)
    spread = 2.0 * temperature * (np.where(np.isfinite(best), best, 0.0) + sigma0 ** 2) + 1e-12
    with np.errstate(invalid="ignore"):
        logits = -(scores - best[:, None]) / spread[:, None]
    weights = np.where(np.isfinite(scores), np.exp(np.nan_to_num(logits, nan=-np.inf)), 0.0)
    if weighting == "equal":
        weights = np.isfinite(scores).astype(float)
    elif pool and has_tail.sum() >= 2:
        weights = _pooled_weights(scores[has_tail], sigma0[has_tail], temperature) * usable
    no_score = ~has_tail | (weights.sum(axis=1) <= 0)
    weights = np.where(no_score[:, None], usable.astype(float), weights)
    return weights / np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)


def _pooled_weights(scores: np.ndarray, sigma: np.ndarray, temperature: float) -> np.ndarray:
    """Shared weights from backtest scores (rows: curves) of one sweep.

    A failed forecast scores as a log error of 1. The weight of family k is
    ``exp(-n * (s_k - s_best) / (2 * temperature * (s_best + mean sigma**2)))``
    with ``s`` the mean score over the ``n`` curves: the Gaussian
    log-likelihood ratio of n curves' evidence.
    """
    capped = np.minimum(np.where(np.isfinite(scores), scores, 1.0), 1.0)
    pooled = capped.mean(axis=0)
    best = pooled.min()
    spread = 2.0 * temperature * (best + np.mean(sigma ** 2)) + 1e-12
    return np.exp(-scores.shape[0] * (pooled - best) / spread)[None, :]


def _check_families(families) -> tuple[str, ...]:
    names = DEFAULT_FAMILIES if families is None else (
        (families,) if isinstance(families, str) else tuple(families))
    if not names or any(name not in FAMILIES for name in names):
        raise fail("families", families, "a non-empty list drawn from " + ", ".join(FAMILIES))
    return names


class ParametricEnsemble(Surrogate):
    """Backtest-weighted mixture of parametric learning-curve families.

    Parameters
    ----------
    families : sequence of str or str, optional
        Family names from :data:`scalekit.surrogates._curve_families.FAMILIES`; by
        default :data:`~scalekit.surrogates._curve_families.DEFAULT_FAMILIES`. One name
        gives a single-family surrogate with the same noise model.
    holdout : float
        Share of the prefix's log-x span held back to score the families.
    temperature : float
        Softness of the weights (larger spreads them over more families).
    weighting : {"backtest", "equal"}
        Weigh the families by their backtest scores, or equally.
    prior_rate, prior_points : float
        Prior growth of the log error per e-fold of x and its weight in points.
    interval_scale : float
        Multiplies every standard deviation (1 = as measured on the prefix).
    direction : {"minimize", "maximize"}
        Loss (lower is better) or a score below 1 (higher is better).

    Attributes
    ----------
    weights_ : dict
        Family name to weight.
    sigma_, rate_ : float
        Scatter about the fits and error growth per e-fold of x (log units).
    """

    _min_points = 4

    def __init__(self, *, families=None, holdout: float = 0.3, temperature: float = 1.0,
                 weighting: str = "backtest", prior_rate: float = 0.02, prior_points: float = 2.0,
                 interval_scale: float = 1.0, direction: str = "minimize") -> None:
        self.families = families
        self.holdout = holdout
        self.temperature = temperature
        self.weighting = weighting
        self.prior_rate = prior_rate
        self.prior_points = prior_points
        self.interval_scale = interval_scale
        self.direction = direction

    def _settings(self) -> dict:
        check_number("holdout", self.holdout, low=0.0, high=1.0, low_open=True, high_open=True)
        check_number("temperature", self.temperature, low=0.0, low_open=True)
        check_number("prior_rate", self.prior_rate, low=0.0)
        check_number("prior_points", self.prior_points, low=0.0, low_open=True)
        check_number("interval_scale", self.interval_scale, low=0.0, low_open=True)
        check_choice("weighting", self.weighting, WEIGHTINGS)
        return dict(families=_check_families(self.families), holdout=self.holdout,
                    temperature=self.temperature, weighting=self.weighting,
                    prior_rate=self.prior_rate,
                    prior_points=self.prior_points, interval_scale=self.interval_scale)

    def _fit(self, x, loss):
        settings = self._settings()
        state = fit_ensemble(x[None], loss[None], np.ones((1, x.size), bool), **settings)
        self.state_ = state
        self.weights_ = dict(zip(settings["families"], state.weights[0].tolist(), strict=True))
        self.sigma_ = float(state.sigma[0])
        self.rate_ = float(state.rate[0])

    def _log_mixture(self, x):
        means, weights, sd = self.state_.log_mixture(x[None])
        return means[0], weights[0], sd[0]


def forecast_batch(x: np.ndarray, y: np.ndarray, mask: np.ndarray, x_new: np.ndarray,
                   qs: np.ndarray, **settings) -> np.ndarray:
    """Quantiles (B, m, Q) of the ensemble forecast for B padded curves at once.

    The same computation as :class:`ParametricEnsemble`, vectorised across
    curves; ``settings`` are its settings (``families`` as a tuple of names).
    """
    return fit_ensemble(x, y, mask, **settings).quantiles(x_new, qs)
