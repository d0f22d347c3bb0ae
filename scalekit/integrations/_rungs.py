"""Asynchronous Successive Halving on forecasts: the rungs and the rule both adapters share.

Rung ``k`` lies at resource ``min_resource * reduction_factor**k`` below
``max_resource`` (exact on the decimals as written:
:func:`scalekit.allocate._schedules.rung_resources`), as in Optuna's
``SuccessiveHalvingPruner`` and Ray Tune's ASHA (Li et al. 2020, "A system for
massively parallel hyperparameter tuning"). A trial that reaches a rung gets a
*score*: the optimistic quantile of the forecast of its value at
``max_resource``, from a learning-curve surrogate of :mod:`scalekit.surrogates`
fitted to its points so far (through
:func:`scalekit.allocate._forecasters.make_forecaster`). It goes on if its score
is among the best ``max(1, n // reduction_factor)`` of the ``n`` scores
recorded at that rung so far, itself included — Optuna's promotion rule, on
forecasts instead of current values. A trial is not judged before it has
:data:`MIN_POINTS` points and the forecast reaches, on a log scale, no further
beyond its points than :data:`REACH` times their span (``log(max_resource /
last) <= REACH * log(last / first)``: with points from step 1 and
``max_resource=300``, from step 81 on): no surrogate tells a slow starter from a
poor run on the first points of its curve (a model that warms up twelve times
longer is pruned at step 9 of 300, and one that sits on a plateau before it
drops is still pruned when judged from step 18, 29 or 45 on: reach 1, 0.7, 0.5).
It goes on, and is judged at the rungs it
has passed once it can be. Ranking by forecasts is what Schram et
al. (2026) do in a synchronous sweep, because small models look best early and
large ones win late.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from scalekit.allocate import SURROGATES, make_forecaster
from scalekit.allocate import rung_resources
from scalekit.allocate import Curve
from scalekit.checks import check_choice, check_number, fail
from scalekit.errors import InputError


#: Points a trial needs before it is judged at a rung (the per-curve surrogates' minimum).
MIN_POINTS = 4
#: How far (on a log scale, as a share of the span of a trial's points) a forecast may
#: reach beyond them before the trial is judged. Chosen among 1, 0.7, 0.5 and 0.3 on
#: late-bloomer studies of some shapes and scored on others (bench/late_bloomer_pruner.py):
#: at 0.5 and above the largest model is pruned on plateau-then-drop shapes.
REACH = 0.3
#: The ``ensemble`` surrogate's families when ranking trials: the six whose fit to one
#: curve costs 4-6 ms (mmf, exp4, janoschek and weibull cost 13-18 ms each), which
#: keeps a ``should_prune`` call that forecasts under 100 ms (bench/bench_pruner.py);
#: bench/late_bloomer_pruner.py scores them against all twelve on held-out shapes.
FAMILIES = ("vap", "pow3", "loglinear", "hill3", "ilog2", "satpow")


class ForecastRanking:
    """Rungs, scores and the promotion rule of forecast-guided Successive Halving.

    Parameters
    ----------
    min_resource, max_resource : float
        Resource of the first rung and at the end of training (steps, epochs),
        on the axis the trials report. Points at a resource <= 0 (an untrained
        step 0) are not used for forecasts.
    reduction_factor : int
        Each rung keeps about one trial in ``reduction_factor``.
    surrogate : {"ensemble", "gp", "joint"}
        The forecaster (see :func:`~scalekit.allocate._forecasters.make_forecaster`):
        ``ensemble`` and ``gp`` fit each trial's own curve (those with fewer than
        four points borrow from all trials through ``joint``), ``joint`` fits one
        curve shape shared by all trials.
    quantile : float
        The forecast quantile ranked on, in (0, 1); below 0.5 is optimistic
        (a trial goes on if it *may* end well).
    maximize : bool
        The value is a score to maximise below 1 (an accuracy), forecast as the
        error ``1 - value``; otherwise a positive loss to minimise.
    families : sequence of str, optional
        The ``ensemble`` surrogate's curve families (:data:`FAMILIES` by default;
        None: all of :data:`scalekit.surrogates._curve_families.DEFAULT_FAMILIES`).
    reach : float
        How far a forecast may reach beyond a trial's points, as a share of their
        span on a log scale: a trial is judged once ``log(max_resource / last) <=
        reach * log(last / first)`` (:data:`REACH` by default).
    """

    def __init__(self, *, min_resource: float, max_resource: float, reduction_factor: int = 3,
                 surrogate: str = "ensemble", quantile: float = 0.2, maximize: bool = False,
                 families: Sequence[str] | None = FAMILIES, reach: float = REACH):
        self.min_resource = check_number("min_resource", min_resource, low=0, low_open=True)
        self.max_resource = check_number("max_resource", max_resource, low=0, low_open=True)
        if min_resource >= max_resource:
            raise fail("min_resource", min_resource, f"< max_resource ({max_resource!r})")
        self.reduction_factor = check_number("reduction_factor", reduction_factor, low=2,
                                             integer=True)
        self.surrogate = check_choice("surrogate", surrogate, SURROGATES)
        self.quantile = check_number("quantile", quantile, low=0, high=1, low_open=True,
                                     high_open=True)
        self.maximize = bool(maximize)
        self.reach = check_number("reach", reach, low=0, low_open=True)
        self.families = None if families is None else tuple(families)
        self._forecaster = make_forecaster(surrogate, families=self.families)
        #: Whether a trial's forecast reads the other trials' curves (``joint``).
        self.pooled = surrogate == "joint"
        ladder = rung_resources(min_resource, max_resource, self.reduction_factor)
        self.rungs = ladder if ladder[-1] < max_resource else ladder[:-1]

    def due(self, resource: float, done: int) -> list[int]:
        """Indices of the rungs from ``done`` on that ``resource`` has reached."""
        return [k for k in range(done, len(self.rungs)) if resource >= self.rungs[k]]

    def score(self, trial, curves: Mapping) -> float:
        """Forecast loss quantile of ``trial`` at ``max_resource`` (lower is better).

        ``curves`` maps trials (``trial`` included) to ``(resources, values)``
        as reported so far; the others inform the ``joint`` surrogate only
        (:attr:`pooled`), and the per-trial surrogates need ``trial``'s alone. A trial
        with fewer than :data:`MIN_POINTS` points, or whose points span less (in log)
        than the forecast must reach beyond them, scores NaN (not judged yet: the
        callers keep it going and judge it at that rung once it has them); one the
        surrogate cannot forecast scores its last value, as plain Successive Halving
        would.
        """
        points = curves.get(trial)
        own = self._curve(trial, *points) if points is not None else None
        if own is None or not len(own):
            return np.inf
        first, last = own.resource[0], own.resource[-1]
        if len(own) < MIN_POINTS or (np.log(self.max_resource / last)
                                     > self.reach * np.log(last / first) + 1e-12):
            return float("nan")
        observed = {trial: own}
        if self.pooled:  # only the joint surrogate reads the other trials' curves
            for key, other in curves.items():
                curve = own if key == trial else self._curve(key, *other)
                if len(curve):
                    observed[key] = curve
        quantiles = self._forecaster.forecast(observed, {}, {trial: np.array([self.max_resource])},
                                              [self.quantile])
        value = float(quantiles[trial][0, 0])
        return value if np.isfinite(value) else float(own.loss[-1])

    def _curve(self, trial, resources: Sequence[float], values: Sequence[float]) -> Curve:
        x, y = np.asarray(resources, float), np.asarray(values, float)
        keep = (x > 0) & np.isfinite(y)
        x, y = x[keep], y[keep]
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        loss = 1.0 - y if self.maximize else y
        if (loss <= 0).any():
            what = "a score below 1 when maximising" if self.maximize else "a positive loss"
            raise InputError(f"trial {trial} reported {y[loss <= 0][0]!r}; forecasts need {what} "
                             f"(rescale or shift the value reported).")
        return Curve(x, x, loss)

    def keeps(self, score: float, competing: Sequence[float]) -> bool:
        """Whether ``score`` is among the best ``max(1, n // reduction_factor)`` of
        ``competing`` (the ``n`` scores recorded at the rung, ``score`` included)."""
        ordered = np.sort(np.asarray(competing, float))
        place = max(1, len(ordered) // self.reduction_factor)
        return bool(score <= ordered[place - 1])
