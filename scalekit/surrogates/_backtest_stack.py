"""Stacking learned from the observed points alone: each run backtested on its own prefix.

For every task the observed prefix is cut where the forecast would start if
the task's horizon were asked of its prefix: the points with ``x >
x_last * exp(-h)`` are held back, ``h = ln(max x_target / x_last)`` (only the
requested positions are read, never a truth). In a group where no task keeps
``min_points`` points below that cut (a long horizon asked of short prefixes),
each task keeps its first ``min_points`` points and holds back the rest: the
longest backtest its prefix allows (before, such a group learned nothing and
took equal weights and the fallback spread). Each candidate forecasts those
held-back points from the rest (a backtest where a candidate's forecast is not
finite takes no part). Per group of tasks (a sweep, or a domain of a
benchmark) the candidates' full-prefix medians are combined in log space:

- **Weights.** The simplex weights minimising the mean over the group's
  backtests of each backtest's RMSE of log loss (every curve counts once, as
  forecasts are judged) are shrunk toward the single candidate with the lowest
  such mean: with ``d`` the per-curve gain of the stack over that candidate
  (``n`` curves), the stack keeps the share ``max(0, 1 - 1/t**2)``, ``t =
  mean(d) / (sd(d) / sqrt(n))`` -- the positive-part James--Stein factor
  (Efron & Morris 1973): the stack is kept in full only where its backtest gain
  is many standard errors from zero, and not at all where it is within one (the
  one-standard-error rule made continuous). Thin or noisy evidence thus falls
  back on one candidate rather than on weights fitted to its noise.
- **Interval.** Each backtest error ``e`` of the combined median at horizon
  ``h`` beyond its prefix is scaled to ``r = e / sqrt(h0**2 + h**2)``; the
  half-width of the central ``level`` interval in ln loss at horizon ``h`` is
  ``q_level * sqrt(h0**2 + h**2)``, ``q_level`` the split-conformal quantile of
  the group's ``|r|`` (the ``ceil((n + 1) level)``-th smallest of ``n``; Vovk et
  al. 2005, Lei et al. 2018). Where a group has too few backtest points for that
  rank, the level takes the normal half-width ``z s`` with ``s**2 = mean(r**2)``
  (``fallback_spread`` without any backtest).
- **Annealing drop.** Where a task knows its run's learning-rate schedule
  (:attr:`~scalekit.surrogates._evaluate.Task.rates`, ``x`` the step), a trend
  fitted to the prefix misses the drop in loss that the rate's further fall
  brings (no prefix holds it). With ``phi(x)`` the rate's fall below its
  running peak over the schedule's peak, the loss is taken to be a curve at the
  peak rate times ``exp(-anneal_drop * phi(x))``: the prefix (and so its
  backtest) is lifted by ``exp(anneal_drop * phi)`` before the candidates fit
  it, and the combined forecast is lowered by ``exp(-anneal_drop * phi)`` at
  each target. This is the loss-drop term of the multi-power law of Luo et al.
  (2025), ``B sum (eta_{k-1} - eta_k) G(...)`` once its saturating ``G`` has
  reached 1 (its largest value), in ln loss relative to the peak rate. The
  default ``anneal_drop = 0.0385`` is the mean of ``B eta_max / L`` at the end
  of the paper's cosine run for its two models, with the repository's
  published parameters (``B`` = 363.8 and 437.9, ``eta_max`` = 3e-4, final
  loss 3.304 and 2.979: 0.033 and 0.044); it is not fitted to any curve it
  forecasts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtri

from scalekit.checks import check_number
from scalekit.errors import InputError
from scalekit.progress import track
from scalekit.surrogates._evaluate import QUANTILES, Method, Task, horizon_reach, median_column

_MEDIAN = median_column()


def backtest_task(task: Task, *, min_points: int, longest: bool = False) -> Task | None:
    """The task's prefix cut at its own horizon; None where fewer than ``min_points``
    points would be kept (with ``longest``: then cut after its first ``min_points``) or
    nothing would be held back."""
    horizon = float(np.log(task.x_target.max() / task.x[-1]))
    head = task.x <= task.x[-1] * np.exp(-max(horizon, 1e-9))
    if head.sum() < min_points and longest:
        head = np.arange(task.x.size) < min_points
    if head.sum() < min_points or head.all():
        return None
    return replace(task, x=task.x[head], y=task.y[head], x_target=task.x[~head],
                   y_target=task.y[~head])


def rate_fall(task: Task, x: np.ndarray) -> np.ndarray:
    """``phi``: the rate's fall below its running peak at each step ``x``, over the
    schedule's peak (0 during a warm-up, and everywhere for a task without ``rates`` or
    with no positive rate).
    The step at a schedule's end (after its last update) keeps the last rate, as in
    :meth:`scalekit.schedules.Schedule.rates_through`."""
    rates = np.zeros(1) if task.rates is None else np.asarray(task.rates, dtype=float)
    if rates.max() <= 0:
        return np.zeros(np.shape(x))
    steps = np.round(x).astype(np.int64)
    if steps.min() < 0 or steps.max() > rates.size:
        raise InputError(f"run {task.run!r}: its schedule ends at step {rates.size}, but the "
                         f"forecast asks for step {steps.max()}")
    steps = np.minimum(steps, rates.size - 1)
    return (np.maximum.accumulate(rates)[steps] - rates[steps]) / rates.max()


def _lifted(task: Task, drop: float) -> Task:
    """``task`` with its losses at the peak rate: times ``exp(drop * phi)``."""
    if task.rates is None or drop == 0:
        return task
    return replace(task, y=task.y * np.exp(drop * rate_fall(task, task.x)),
                   y_target=task.y_target * np.exp(drop * rate_fall(task, task.x_target)))


def candidate_medians(method: Method, tasks: Sequence[Task]) -> list[np.ndarray]:
    """The median forecast of each task by ``method``: from its ``medians`` where it has one
    (the median alone, e.g. :func:`scalekit.surrogates._evaluate.ensemble_methods`), else
    the median column of its quantiles."""
    medians = getattr(method, "medians", None)
    if medians is not None:
        return [np.asarray(m)[: t.x_target.size] for m, t in zip(medians(tasks), tasks, strict=True)]
    return [np.asarray(q)[: t.x_target.size, _MEDIAN] for q, t in zip(method(tasks), tasks, strict=True)]


def curve_rmse_weights(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """Simplex weights minimising the mean over curves of each curve's RMSE.

    ``blocks``: one (m_i, K) array of log errors per curve. The objective is a
    mean of norms of linear maps of ``w``, so convex: SLSQP from equal weights
    finds its minimum.
    """
    errors = np.vstack(blocks)
    sizes = np.array([block.shape[0] for block in blocks])
    curve = np.repeat(np.arange(sizes.size), sizes)
    k = errors.shape[1]

    def objective(w):
        e = errors @ w
        rmse = np.sqrt(np.bincount(curve, e ** 2) / sizes + 1e-24)
        return rmse.mean(), errors.T @ (e / (sizes * rmse)[curve]) / sizes.size

    start = np.full(k, 1.0 / k)
    sol = minimize(objective, start, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                   constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0,
                                 "jac": lambda w: np.ones_like(w)}],
                   options={"maxiter": 500, "ftol": 1e-14})
    w = np.clip(sol.x, 0.0, None) if np.isfinite(sol.x).all() else start
    return w / w.sum()


def shrunk_weights(blocks: Sequence[np.ndarray]) -> tuple[np.ndarray, float]:
    """The stacking weights shrunk toward the best single candidate, and the share kept.

    See the module docstring: ``share = max(0, 1 - 1/t**2)`` with ``t`` the
    paired t statistic of the stack's per-curve RMSE gain over the candidate
    with the lowest mean RMSE.
    """
    k = blocks[0].shape[1]
    stack = curve_rmse_weights(blocks)
    rmse = np.array([np.sqrt(np.mean(block ** 2, axis=0)) for block in blocks])   # (n, K)
    best = int(np.argmin(rmse.mean(axis=0)))
    gain = rmse[:, best] - np.array([np.sqrt(np.mean((b @ stack) ** 2)) for b in blocks])
    share = 0.0
    if gain.size > 1 and gain.mean() > 0:
        variance = gain.var(ddof=1) / gain.size
        share = 1.0 if variance == 0 else max(0.0, 1.0 - variance / gain.mean() ** 2)
    return share * stack + (1.0 - share) * np.eye(k)[best], share


def half_widths(ratios: np.ndarray, levels: Sequence[float], fallback: float) -> dict:
    """Half-width per unit reach of each central ``level`` interval (module docstring)."""
    scores = np.sort(np.abs(ratios))
    spread = float(np.sqrt(np.mean(ratios ** 2))) if ratios.size else fallback
    out, widest = {}, 0.0
    for level in sorted(levels):   # a wider level never gets a narrower interval (a normal
        rank = int(np.ceil((scores.size + 1) * level)) - 1   # beyond the conformal ranks)
        width = float(scores[rank]) if rank < scores.size \
            else spread * float(ndtri((1 + level) / 2))
        out[level] = widest = max(widest, width)
    return out


def _level(quantile: float) -> float:
    """The central interval a quantile bounds (0.9 and 0.1: 0.8)."""
    return round(float(abs(2 * quantile - 1)), 12)


class BacktestStacked:
    """Candidates stacked per group with weights and intervals from prefix backtests.

    Parameters
    ----------
    candidates : mapping of str to method
        The methods to combine; only their medians are read
        (:func:`candidate_medians`).
    min_points : int
        Fewest points a backtest's head keeps; tasks with no more points take no
        part in learning (they are still forecast).
    h0 : float
        Horizon (in e-folds of x) below which the interval stops narrowing.
    fallback_spread : float
        ``s`` of the normal interval for a group without any backtest.
    anneal_drop : float
        Drop of ln loss per unit fall of the learning rate relative to its peak,
        for tasks that know their schedule (module docstring); 0 ignores
        schedules.

    Attributes
    ----------
    weights_ : dict
        Group label to {candidate: weight}, from the last call.
    share_ : dict
        Group label to the share of the stacking weights kept (the rest on the
        best single candidate).
    widths_ : dict
        Group label to {level: half-width in ln loss per unit of
        ``sqrt(h0**2 + h**2)``}.
    """

    def __init__(self, candidates: Mapping[str, Method], *, min_points: int = 6,
                 h0: float = 0.1, fallback_spread: float = 0.05,
                 anneal_drop: float = 0.0385) -> None:
        self.candidates = dict(candidates)
        self.min_points = min_points
        self.h0 = h0
        self.fallback_spread = fallback_spread
        self.anneal_drop = anneal_drop

    def __call__(self, tasks: Sequence[Task]) -> list[np.ndarray]:
        check_number("min_points", self.min_points, low=2, integer=True)
        check_number("h0", self.h0, low=0.0, low_open=True)
        check_number("fallback_spread", self.fallback_spread, low=0.0, low_open=True)
        check_number("anneal_drop", self.anneal_drop, low=0.0)
        drops = [self.anneal_drop * rate_fall(t, t.x_target) for t in tasks]
        tasks = [_lifted(t, self.anneal_drop) for t in tasks]
        backs = [backtest_task(t, min_points=self.min_points) for t in tasks]
        learned = {t.group for t, b in zip(tasks, backs, strict=True) if b is not None}
        backs = [b if b is not None or t.group in learned else
                 backtest_task(t, min_points=self.min_points, longest=True)
                 for t, b in zip(tasks, backs, strict=True)]
        learn = [i for i, b in enumerate(backs) if b is not None]
        pseudo = [backs[i] for i in learn]
        names = list(self.candidates)
        jobs = [("full", n, tasks) for n in names] + [("back", n, pseudo) for n in names
                                                      if pseudo]
        with np.errstate(divide="ignore", invalid="ignore"):  # a failed forecast: -inf, NaN
            medians = {(phase, name): [np.log(m) for m in candidate_medians(
                self.candidates[name], batch)] for phase, name, batch in track(jobs, "forecast")}
        levels = sorted({_level(q) for q in QUANTILES} - {0.0})
        signs = np.sign(QUANTILES - 0.5)
        self.weights_, self.share_, self.widths_ = {}, {}, {}
        out: list[np.ndarray | None] = [None] * len(tasks)
        for label in sorted({t.group for t in tasks}):
            rows = [j for j, i in enumerate(learn) if tasks[i].group == label]
            weights, share, ratios = np.full(len(names), 1.0 / len(names)), 0.0, np.empty(0)
            errors = {j: np.column_stack([medians["back", n][j] for n in names])
                      - np.log(pseudo[j].y_target)[:, None] for j in rows}
            rows = [j for j in rows if np.isfinite(errors[j]).all()]
            blocks = [errors[j] for j in rows]
            if rows:
                weights, share = shrunk_weights(blocks)
                ratios = np.concatenate([(block @ weights) / horizon_reach(pseudo[j], self.h0)
                                         for j, block in zip(rows, blocks, strict=True)])
            widths = half_widths(ratios, levels, self.fallback_spread)
            self.weights_[label] = dict(zip(names, weights.tolist(), strict=True))
            self.share_[label] = float(share)
            self.widths_[label] = widths
            offsets = signs * np.array([widths.get(_level(q), 0.0) for q in QUANTILES])
            for i in (i for i, t in enumerate(tasks) if t.group == label):
                median = _stack(weights, [medians["full", n][i] for n in names])
                reach = horizon_reach(tasks[i], self.h0)
                out[i] = np.exp((median - drops[i])[:, None] + reach[:, None] * offsets[None, :])
        return out


def _stack(weights: np.ndarray, medians: list[np.ndarray]) -> np.ndarray:
    """The weighted mean of the candidates' log medians over those whose forecast is
    finite (a candidate that fails or forecasts 0 for a task must not take the stack
    with it), weights renormalised; equal weights over the finite ones where every
    weighted candidate failed; NaN where none is finite."""
    finite = np.array([np.isfinite(m).all() for m in medians])
    w = np.where(finite, weights, 0.0)
    if not (w > 0).any():  # every weighted candidate failed: the finite ones, equally
        w = finite.astype(float)
    if not w.any():
        return np.full(np.shape(medians[0]), np.nan)
    return sum(wi * m for wi, m in zip(w / w.sum(), medians, strict=True) if wi > 0)
