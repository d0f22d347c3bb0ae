"""Promotion policies: which runs of a rung go on to the next one.

- ``loss``: the lowest current loss (plain Successive Halving).
- ``forecast``: the lowest forecast loss at the run's target resource, from a
  learning-curve surrogate (Schram et al. 2026 rank by surrogate forecasts
  because small models look best early and large ones win late).
- ``frontier``: the runs whose optimistic forecast curve comes furthest below
  the median forecasts of all the other runs at some compute up to the target,
  i.e. the runs that can still lie on the loss-compute frontier.

``uniform`` and ``exhaustive`` are allocations without promotion; they live in
:mod:`scalekit.allocate.replay`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from scalekit.allocate._forecasters import SweepForecaster, make_forecaster
from scalekit.allocate._sweep import Curve, Sweep
from scalekit.checks import check_choice, check_number

#: The policies that promote runs (:func:`get_policy`).
PROMOTION_POLICIES = ("loss", "forecast", "frontier")
#: The policies ``plan`` and ``run`` take: the default ``commit`` allocator
#: (:mod:`scalekit.allocate._commit`) and Successive Halving with a promotion policy.
ALLOCATION_POLICIES = ("commit", *PROMOTION_POLICIES)
#: Those and the allocations without promotion.
POLICIES = (*ALLOCATION_POLICIES, "uniform", "exhaustive")


@dataclass
class PromotionContext:
    """What a policy may use besides the points: the cost model, the top rung, the rng."""

    sweep: Sweep
    target: float
    rng: np.random.Generator
    rung: int = 0

    def target_compute(self, run: str) -> float:
        """FLOPs of ``run`` at the top rung (or at its own end, if earlier)."""
        return self.sweep.flops_per_unit[run] * min(self.target, self.sweep.max_resource[run])


class Policy(Protocol):
    """Ranks candidates: ``select`` returns the ``keep`` runs to promote, best first."""

    name: str

    def select(self, observed: dict[str, Curve], keep: int,
               context: PromotionContext) -> list[str]: ...


def last_loss(curve: Curve) -> float:
    return float(curve.loss[-1]) if len(curve) else np.inf


def rank(scores: dict[str, float], keep: int, rng: np.random.Generator,
          observed: dict[str, Curve]) -> list[str]:
    """The ``keep`` runs of lowest score; NaN scores last, ordered by their current
    loss; remaining ties broken at random by ``rng``."""
    runs = list(scores)
    values = np.array([scores[r] for r in runs], dtype=float)
    values = np.where(np.isfinite(values), values, np.inf)
    current = np.array([last_loss(observed[r]) for r in runs])
    order = np.lexsort((rng.permutation(len(runs)), current, values))
    return [runs[i] for i in order[:keep]]


@dataclass
class LossPolicy:
    """Plain Successive Halving: promote the lowest current losses."""

    name: str = "loss"

    def select(self, observed, keep, context):
        scores = {r: last_loss(c) for r, c in observed.items()}
        return rank(scores, keep, context.rng, observed)


@dataclass
class ForecastPolicy:
    """Promote the lowest forecast loss at each run's target compute.

    Parameters
    ----------
    forecaster : SweepForecaster
        Forecasts of every run's loss at given computes (see
        :mod:`scalekit.allocate._forecasters`).
    quantile : float
        The forecast quantile ranked on (0.5: the median).
    """

    forecaster: SweepForecaster
    quantile: float = 0.5
    name: str = "forecast"

    def select(self, observed, keep, context):
        x = {r: np.array([context.target_compute(r)]) for r in observed}
        q = self.forecaster.forecast(observed, context.sweep.params, x, [self.quantile])
        return rank({r: q[r][0, 0] for r in observed}, keep, context.rng, observed)


@dataclass
class FrontierPolicy:
    """Promote the runs that can lie on the loss-compute frontier up to the target.

    For each run ``i`` and each compute ``c`` on a log grid (``grid_size``
    points) from the largest compute any run has reached to the top rung, the
    margin is ``(F_i(c) - q_i(c)) / F_i(c)``, where ``q_i`` is run ``i``'s
    optimistic quantile (``optimism``) and ``F_i`` the lowest median
    forecast of the *other* runs that reach ``c``. Runs are ranked by their
    largest margin: a positive one means the run may still be on the frontier.
    """

    forecaster: SweepForecaster
    optimism: float = 0.2
    grid_size: int = 8
    name: str = "frontier"

    def select(self, observed, keep, context):
        runs = list(observed)
        reach = np.array([context.target_compute(r) for r in runs])
        start = min(max((c.compute[-1] for c in observed.values() if len(c)), default=reach.min()),
                    reach.max())
        grid = np.geomspace(max(start, reach.max() / 1e6), reach.max(), self.grid_size)
        x = {r: grid for r in runs}
        q = self.forecaster.forecast(observed, context.sweep.params, x,
                                     [self.optimism, 0.5])
        low = np.array([q[r][:, 0] for r in runs])
        median = np.array([q[r][:, 1] for r in runs])
        reachable = grid[None, :] <= reach[:, None] * (1 + 1e-9)
        median = np.where(reachable & np.isfinite(median), median, np.inf)
        low = np.where(reachable & np.isfinite(low), low, np.inf)
        scores = {}
        for i, run in enumerate(runs):
            others = np.delete(median, i, axis=0).min(axis=0) if len(runs) > 1 else median[i]
            with np.errstate(invalid="ignore"):
                margin = np.where(np.isfinite(others) & np.isfinite(low[i]),
                                  (others - low[i]) / others, -np.inf)
            scores[run] = -float(np.max(margin))
        return rank(scores, keep, context.rng, observed)


def get_policy(name: str, *, surrogate: str = "joint", quantile: float = 0.5,
               optimism: float = 0.2, seed: int = 0) -> Policy:
    """The policy called ``name``: ``commit`` (a :class:`~scalekit.allocate._commit.CommitPolicy`,
    which drives its own loop) or the promotion policy ``loss``, ``forecast`` or ``frontier``."""
    check_choice("policy", name, ALLOCATION_POLICIES)
    check_number("quantile", quantile, low=0, high=1, low_open=True, high_open=True)
    check_number("optimism", optimism, low=0, high=1, low_open=True, high_open=True)
    if name == "commit":
        from scalekit.allocate._commit import CommitPolicy

        return CommitPolicy()
    if name == "loss":
        return LossPolicy()
    forecaster = make_forecaster(surrogate, seed=seed)
    if name == "forecast":
        return ForecastPolicy(forecaster, quantile)
    return FrontierPolicy(forecaster, optimism)
