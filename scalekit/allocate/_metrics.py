"""Measures of an allocation, defined in ``docs/allocate.md``.

- best final loss: the lowest loss among the last points the runs reached;
- regret: the gap to the lowest loss any single run reaches within the budget;
- relative improvement over uniform: ``(L_uniform - L) / L_uniform``;
- compute fraction: FLOPs spent over the FLOPs of the exhaustive sweep;
- frontier-law error: relative gap between the law ``L(C) = E + A C^-alpha``
  fitted to the loss-compute frontier of the explored points and the same law
  fitted to the frontier of all points, at a given compute;
- forecast-completed frontier-law error: the same, with the explored points
  joined by the surrogate's median forecasts of the runs the allocation
  promoted last, from their last explored point to their full length;
- all-completed frontier-law error: the same with every candidate completed on
  its logging schedule, runs never trained forecast from their size;
- forecast coverage: whether the intervals an allocator stated with its forecasts
  (``commit``'s) hold the loss the run reaches at the forecast's compute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from scalekit.allocate._sweep import Curve, Sweep

#: Forecast points added per completed run, log-spaced up to its full length.
COMPLETION_POINTS = 8

#: About this many starts of the frontier law's grid are optimised per fit.
FRONTIER_STARTS = 24


def best_final_loss(observed: Mapping[str, Curve]) -> float:
    """Lowest loss among the last points reached by the runs (NaN if none)."""
    last = [c.loss[-1] for c in observed.values() if len(c)]
    return float(min(last)) if last else float("nan")


def hindsight_loss(curves: Mapping[str, Curve], budget: float) -> float:
    """The lowest loss any single run reaches within ``budget`` FLOPs, read from the complete
    ``curves`` (its points at ``budget`` or less): what the budget could have found, in
    hindsight. A policy's regret is ``(L_p - hindsight) / hindsight``, never negative,
    since no point a policy sees cost its run more than the budget."""
    losses = [c.loss[c.compute <= budget * (1 + 1e-12)] for c in curves.values()]
    found = [float(v.min()) for v in losses if len(v)]
    return min(found) if found else float("nan")


def compute_regret(curves: Mapping[str, Curve], loss: float, budget: float) -> float:
    """Regret as compute: the share of ``budget`` that the hindsight-best run would not have
    needed to reach ``loss`` (``1 - c / budget``, ``c`` the least compute at which any point
    of the complete ``curves`` is at or below ``loss``); NaN where no point is."""
    reached = [float(c.compute[c.loss <= loss].min()) for c in curves.values()
               if np.any(c.loss <= loss)]
    return 1.0 - min(reached) / budget if reached else float("nan")


def frontier_points(observed: Mapping[str, Curve]) -> tuple[np.ndarray, np.ndarray]:
    """The loss-compute frontier of the pooled points: each point lower than every cheaper one."""
    compute = np.concatenate([c.compute for c in observed.values()] or [np.empty(0)])
    loss = np.concatenate([c.loss for c in observed.values()] or [np.empty(0)])
    order = np.lexsort((loss, compute))
    compute, loss = compute[order], loss[order]
    keep = loss < np.minimum.accumulate(np.concatenate([[np.inf], loss[:-1]]))
    return compute[keep], loss[keep]


def fit_frontier(observed: Mapping[str, Curve], *, seed: int = 0, min_compute: float = 0.0):
    """Fit ``L(C) = E + A C^-alpha`` (law ``frontier``) to the frontier of ``observed``.

    Huber loss on log residuals (``fit_law`` defaults), started from every
    ``k``-th point of the law's start grid so that about :data:`FRONTIER_STARTS`
    starts are optimised (replays fit hundreds of frontiers). Only frontier
    points at ``min_compute`` FLOPs or more are fitted (the law does not describe
    the first, warm-up points of a sweep). Returns the
    :class:`~scalekit.fit.FitResult`, or None with fewer than four such points
    (three parameters need more than three points).
    """
    from scalekit.fit import fit_law
    from scalekit.laws import get_law

    compute, loss = frontier_points(observed)
    keep = compute >= min_compute
    compute, loss = compute[keep], loss[keep]
    if len(compute) < 4:
        return None
    law = get_law("frontier")
    grid = law.start_grid({"compute": compute}, loss)
    starts = grid[:: max(1, -(-len(grid) // FRONTIER_STARTS))]
    return fit_law(law, {"compute": compute}, loss, starts=starts, seed=seed)


def frontier_miss(fit, observed: Mapping[str, Curve], compute: float) -> float:
    """Relative gap between ``fit`` at ``compute`` and the lowest loss ``observed`` reaches there
    (its last frontier point at or below ``compute``): the reference law's own miss."""
    points, loss = frontier_points(observed)
    seen = loss[points <= compute * (1 + 1e-12)]
    if fit is None or not len(seen):
        return float("nan")
    ours = float(np.asarray(fit.predict({"compute": [compute]}), float).ravel()[0])
    return abs(ours - seen[-1]) / seen[-1]


def frontier_law_error(fit, reference, computes) -> np.ndarray:
    """Relative gap ``|L_fit(C) - L_ref(C)| / L_ref(C)`` at each of ``computes`` (NaN without a fit)."""
    computes = np.asarray(computes, dtype=float)
    if fit is None or reference is None:
        return np.full(len(computes), np.nan)
    ours = np.asarray(fit.predict({"compute": computes}), float).ravel()
    ref = np.asarray(reference.predict({"compute": computes}), float).ravel()
    return np.abs(ours - ref) / ref


def completed_runs(promotions: Sequence[Sequence[str]], observed: Mapping[str, Curve]) -> list[str]:
    """The runs an allocation completes by forecast: those promoted into its last rung.

    Allocations without promotion (``uniform``, ``exhaustive``) complete every
    run they observed.
    """
    if promotions:
        return [run for run in promotions[-1] if len(observed.get(run, ()))]
    return [run for run, curve in observed.items() if len(curve)]


def forecast_completed(observed: Mapping[str, Curve], sweep: Sweep, runs: Sequence[str],
                       forecaster, *, points: int = COMPLETION_POINTS,
                       logged: bool = False) -> dict[str, Curve]:
    """The explored points with each of ``runs`` continued to its full length by forecast.

    ``forecaster`` (a :class:`~scalekit.allocate._forecasters.SweepForecaster`)
    is fitted to every explored point; each run of ``runs`` not yet complete
    gains its median forecast beyond its last explored point, up to its end
    (``sweep.flops_per_unit * sweep.max_resource``): at ``points`` computes
    log-spaced from its last explored point, or, with ``logged``, at the
    computes where ``sweep``'s curve of the run logs points (its logging
    schedule; none of those losses is read). Only with ``logged`` may a run of
    ``runs`` have no explored point (it is forecast from its first logged point
    on, which needs a forecaster that answers for unseen runs). Runs whose
    forecast is not finite are left as explored.
    """
    explored = {run: curve for run, curve in observed.items() if len(curve)}
    grids = {}
    for run in runs:
        if run not in explored and not logged:
            continue
        last = explored[run].compute[-1] if run in explored else 0.0
        end = sweep.flops_per_unit[run] * sweep.max_resource[run]
        if logged:
            grid = sweep.curves[run].compute
            grid = grid[(grid > last * (1 + 1e-9)) & (grid <= end * (1 + 1e-9))]
            if len(grid):
                grids[run] = grid
        elif end > last * (1 + 1e-9):
            grids[run] = np.geomspace(last, end, points + 1)[1:]
    out = dict(observed)
    if not grids or not explored:
        return out
    median = forecaster.forecast(explored, sweep.params, grids, [0.5])
    empty = Curve(np.empty(0), np.empty(0), np.empty(0))
    for run, grid in grids.items():
        loss = np.asarray(median[run], float)[:, 0]
        if np.all(np.isfinite(loss)):
            curve = explored.get(run, empty)
            resource = grid / sweep.flops_per_unit[run]
            out[run] = Curve(np.concatenate([curve.resource, resource]),
                             np.concatenate([curve.compute, grid]),
                             np.concatenate([curve.loss, loss]))
    return out


def forecast_checks(forecasts: Sequence[Mapping], sweep: Sweep) -> list[dict]:
    """Each stated forecast (``run``, ``compute``, ``loss`` and ``[low, high]`` per level
    such as ``"80%"``) against the loss its run reaches at that compute, read from the
    complete curves of ``sweep`` (its last point at or below it): ``truth``, and per level
    whether the interval holds it (``covered_80%``: NaN where no interval was stated) and
    how far its upper end lies above the forecast, relative to it (``upper_80%``)."""
    out = []
    for said in forecasts:
        run = said["run"]
        reached = sweep.curves[run].until(said["compute"] * (1 + 1e-9) / sweep.flops_per_unit[run])
        truth = float(reached.loss[-1]) if len(reached) else float("nan")
        row = {"run": run, "forecast": float(said["loss"]), "truth": truth}
        for level in (k for k in said if k.endswith("%")):
            low, high = said[level]
            row[f"covered_{level}"] = (float(low <= truth <= high) if np.isfinite(low)
                                       else float("nan"))
            row[f"upper_{level}"] = high / said["loss"] - 1
        out.append(row)
    return out
