"""Evaluation harness: cut complete curves, forecast the rest, score the forecasts.

A *task* is one curve's observed prefix and the held-out points to forecast.
:func:`cut_curves` makes tasks from complete curves (each cut at a share of its
last x); :func:`split_tasks` from curves whose rows are already marked as
training or held out (as in Alabdulmohsin et al. 2022). :func:`evaluate` runs
methods on a list of tasks and reports, per method, the mean absolute error of
log loss at each curve's final point, the mean absolute percentage error over
the held-out tail, the share of held-out points inside the central 50/80/95%
intervals, and the fit time per curve. :class:`StackedMethod` combines
methods with weights learned on the calibration half's truths.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import ndtri

from scalekit.checks import check_number, fail
from scalekit.errors import InputError
from scalekit.progress import track
from scalekit.surrogates._base import check_curve
from scalekit.surrogates._scores import ForecastScores

QUANTILES = np.array([0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975])
LEVELS = (0.5, 0.8, 0.95)


def median_column() -> int:
    """Column of the median in quantile arrays laid out by :data:`QUANTILES`."""
    return int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])


def horizon_reach(task: Task, h0: float) -> np.ndarray:
    """``sqrt(h0² + h²)``, ``h`` the log-distance of each target beyond the last observed x:
    the scale a stacked forecast's spread grows with."""
    h = np.maximum(np.log(task.x_target / task.x[-1]), 0.0)
    return np.sqrt(h0 ** 2 + h ** 2)


@dataclass(frozen=True)
class Task:
    """One forecasting problem: an observed prefix and the points to forecast.

    ``rates``, where the run's learning-rate schedule is known and ``x`` is the
    step: the rate at steps 0, 1, … through at least the last target step.
    """

    run: str
    x: np.ndarray
    y: np.ndarray
    x_target: np.ndarray
    y_target: np.ndarray
    group: str = ""
    size: float = float("nan")
    rates: np.ndarray | None = None


@dataclass(frozen=True)
class Forecasts:
    """A method's quantiles for each task, at ``QUANTILES``, and its run time."""

    quantiles: list[np.ndarray]   # per task (m, Q)
    seconds: float


Method = Callable[[Sequence[Task]], list[np.ndarray]]
# A method may also offer ``medians(tasks)``: its median forecasts alone, (m,) per task,
# cheaper than all its quantiles (read by the backtest stacker where present).


def _curves(frame: pd.DataFrame, run: str, x: str, y: str):
    for column in (run, x, y):
        if column not in frame.columns:
            raise InputError(f"the curves have no column {column!r}", column=column)
    for name, curve in frame.groupby(run, sort=True):
        curve = curve.sort_values(x)
        yield str(name), curve


def cut_curves(frame: pd.DataFrame, fractions: Sequence[float], *, run: str = "run",
               x: str = "step", y: str = "loss", group: str | None = None,
               size: str | None = None, min_points: int = 5) -> dict[float, list[Task]]:
    """Tasks from complete curves: each cut at ``x <= fraction * (last x)``.

    A curve enters a cut only when its prefix has at least ``min_points`` points
    and at least one point lies beyond it; a curve with a value of ``y`` <= 0
    (which has no log error) enters none.
    """
    tasks: dict[float, list[Task]] = {f: [] for f in fractions}
    for name, curve in _curves(frame, run, x, y):
        if curve[x].nunique() <= min_points or (curve[y] <= 0).any():
            continue
        xs, ys = check_curve(curve[x].to_numpy(), curve[y].to_numpy(), min_points=2)
        for fraction in fractions:
            cut = fraction * xs[-1]
            head = xs <= cut
            if head.sum() >= min_points and (~head).any():
                tasks[fraction].append(Task(
                    name, xs[head], ys[head], xs[~head], ys[~head],
                    group=str(curve[group].iloc[0]) if group else "",
                    size=float(curve[size].iloc[0]) if size else float("nan")))
    return tasks


def split_tasks(frame: pd.DataFrame, *, train: str, run: str = "run", x: str = "step",
                y: str = "loss", group: str | None = None, size: str | None = None,
                min_points: int = 5) -> list[Task]:
    """Tasks from curves whose rows are marked for fitting (``train`` true) or held out.

    Curves with a value of ``y`` <= 0 (which has no log error) are left out.
    """
    out = []
    for name, curve in _curves(frame, run, x, y):
        seen = curve[train].astype(bool).to_numpy()
        if seen.sum() < min_points or seen.all() or (curve[y] <= 0).any():
            continue
        xs, ys = check_curve(curve[x].to_numpy()[seen], curve[y].to_numpy()[seen], min_points=2)
        xt, yt = check_curve(curve[x].to_numpy()[~seen], curve[y].to_numpy()[~seen], min_points=1)
        out.append(Task(name, xs, ys, xt, yt,
                        group=str(curve[group].iloc[0]) if group else "",
                        size=float(curve[size].iloc[0]) if size else float("nan")))
    return out


def pad(tasks: Sequence[Task]):
    """Stack prefixes and targets into padded arrays: x, y, mask (B, n) and x_target (B, m)."""
    n = max(t.x.size for t in tasks)
    m = max(t.x_target.size for t in tasks)
    x = np.ones((len(tasks), n))
    y = np.ones((len(tasks), n))
    mask = np.zeros((len(tasks), n), bool)
    xt = np.ones((len(tasks), m))
    for i, task in enumerate(tasks):
        k = task.x.size
        x[i, :k], y[i, :k], mask[i, :k] = task.x, task.y, True
        x[i, k:] = task.x[-1]
        xt[i, :task.x_target.size] = task.x_target
        xt[i, task.x_target.size:] = task.x_target[-1]
    return x, y, mask, xt


def run_method(method: Method, tasks: Sequence[Task],
               calibration: Sequence[int] = ()) -> Forecasts:
    """Run ``method`` on ``tasks`` and time it.

    A method that learns from truths (``learns_from_calibration`` true, such as
    :class:`StackedMethod`) is also given the indices of the calibration tasks,
    the only ones whose truths it may read.
    """
    start = time.perf_counter()
    if getattr(method, "learns_from_calibration", False):
        quantiles = method(tasks, calibration=list(calibration))
    else:
        quantiles = method(tasks)
    return Forecasts(quantiles, time.perf_counter() - start)


def score(tasks: Sequence[Task], forecasts: Forecasts) -> dict:
    """Scores of one method on ``tasks`` (see the module docstring)."""
    final, mape, inside = [], [], {level: [] for level in LEVELS}
    median = median_column()
    for task, q in zip(tasks, forecasts.quantiles, strict=True):
        q = np.asarray(q)[: task.x_target.size]
        if not np.isfinite(q).all():
            raise RuntimeError(f"non-finite forecast for {task.run}")
        final.append(abs(np.log(q[-1, median]) - np.log(task.y_target[-1])))
        mape.append(np.mean(np.abs(q[:, median] - task.y_target) / task.y_target) * 100)
        for level in LEVELS:
            lo, hi = _level_columns(level)
            inside[level].append((q[:, lo] <= task.y_target) & (task.y_target <= q[:, hi]))
    row = {"curves": len(tasks), "points": int(sum(t.x_target.size for t in tasks)),
           "final_log_err": float(np.mean(final)), "tail_mape_pct": float(np.mean(mape))}
    for level in LEVELS:
        row[f"cover{int(level * 100)}"] = float(np.concatenate(inside[level]).mean())
    row["ms_per_curve"] = 1000 * forecasts.seconds / max(len(tasks), 1)
    return row


def _level_columns(level: float) -> tuple[int, int]:
    lo = int(np.argmin(np.abs(QUANTILES - (1 - level) / 2)))
    hi = int(np.argmin(np.abs(QUANTILES - (1 + level) / 2)))
    return lo, hi


def conformal_scales(tasks: Sequence[Task], quantiles: Sequence[np.ndarray]) -> dict[float, float]:
    """Split-conformal widening factor per level, from calibration tasks.

    For each held-out point the score is its distance from the median in log
    units over the distance of the interval edge on its side; the factor is the
    ``ceil((n + 1) * level) / n`` empirical quantile of the scores, so multiplying
    every log half-width by it covers ``level`` of exchangeable new points.
    """
    median = median_column()
    scales = {}
    for level in LEVELS:
        lo, hi = _level_columns(level)
        scores = []
        for task, q in zip(tasks, quantiles, strict=True):
            lq = np.log(np.asarray(q)[: task.x_target.size])
            ly = np.log(task.y_target)
            above = ly >= lq[:, median]
            edge = np.where(above, lq[:, hi] - lq[:, median], lq[:, median] - lq[:, lo])
            scores.append(np.abs(ly - lq[:, median]) / np.maximum(edge, 1e-12))
        scores = np.sort(np.concatenate(scores))
        k = min(int(np.ceil((scores.size + 1) * level)), scores.size) - 1
        scales[level] = float(scores[k])
    return scales


def rescale(quantiles: np.ndarray, scales: dict[float, float]) -> np.ndarray:
    """Widen (or narrow) each central interval of ``quantiles`` (m, Q) in log units."""
    median = median_column()
    lq = np.log(np.asarray(quantiles))
    out = lq.copy()
    for level, factor in scales.items():
        for column in _level_columns(level):
            out[:, column] = lq[:, median] + factor * (lq[:, column] - lq[:, median])
    return np.exp(out)


def calibrated(tasks: Sequence[Task], quantiles: Sequence[np.ndarray],
               calibration: Sequence[int], *, by: Callable[[Task], str] | None = None,
               min_points: int = 20) -> tuple[list[np.ndarray], dict[str, dict[float, float]]]:
    """Every task's quantiles rescaled by factors fitted on the ``calibration`` tasks.

    One set of factors (:func:`conformal_scales`) per label of ``by`` (e.g. per
    cut of the curves), fitted on the calibration tasks of that label; a label
    with fewer than ``min_points`` calibration points takes the factors fitted on
    all calibration tasks. Returns the rescaled quantiles and the factors by
    label (``"all"``: the pooled ones).
    """
    def fit(members):
        return conformal_scales([tasks[i] for i in members], [quantiles[i] for i in members])
    scales = {"all": fit(calibration)}
    label_of = [by(t) if by is not None else "all" for t in tasks]
    for label in sorted(set(label_of) - {"all"}):
        members = [i for i in calibration if label_of[i] == label]
        if sum(tasks[i].x_target.size for i in members) >= min_points:
            scales[label] = fit(members)
    return ([rescale(q, scales.get(label, scales["all"])) for q, label in zip(quantiles, label_of,
                                                                              strict=True)],
            scales)


def evaluate(tasks: Sequence[Task], methods: Mapping[str, Method], *,
             split_seed: int | None = None, by: Callable[[Task], str] | None = None,
             calibrate_by: Callable[[Task], str] | None = None) -> ForecastScores:
    """Score every method on ``tasks``: a :class:`ForecastScores` whose ``table`` has one
    row per method (and per ``by`` label, column ``subset``).

    Every method forecasts every task. With ``split_seed`` the runs are split in
    two halves (:func:`calibration_split`): intervals are recalibrated on the
    ``calibration`` half (:func:`conformal_scales`, one factor per method and
    level, or one per label of ``calibrate_by``: :func:`calibrated`) and every
    score is computed on the other half only, where the truths played no part;
    the raw 80% coverage (before recalibration) and the pooled 80% factor are
    reported too. ``by`` labels tasks (e.g. by cut) for extra rows;
    the row of all tasks has the label ``"all"``; with a split, the row
    ``"calibration"`` scores the calibration half (its coverage is in-sample
    after recalibration; its errors may be used to choose among methods without
    reading the report half). The time column is the
    method's whole run divided by the number of curves. Methods that learn from
    truths (:class:`StackedMethod`) see the calibration half's only.
    """
    if not tasks:
        raise InputError("no curve is long enough to be cut and forecast.")
    calibration: list[int] = []
    report = list(range(len(tasks)))
    if split_seed is not None:
        chosen = {t.run for t in calibration_split(tasks, seed=split_seed)[0]}
        calibration = [i for i, t in enumerate(tasks) if t.run in chosen]
        report = [i for i, t in enumerate(tasks) if t.run not in chosen]
    groups = {"all": report}
    if by is not None:
        for i in report:
            groups.setdefault(by(tasks[i]), []).append(i)
    if calibration:
        groups["calibration"] = calibration
    rows = []
    for name, method in track(methods.items(), "forecast methods", total=len(methods)):
        result = run_method(method, tasks, calibration)
        per_curve = result.seconds / len(tasks)
        scales = None
        if calibration:
            fixed_all, scales = calibrated(tasks, result.quantiles, calibration, by=calibrate_by)
        for label, members in groups.items():
            subset = [tasks[i] for i in members]
            raw = Forecasts([result.quantiles[i] for i in members], per_curve * len(members))
            row = {"method": name, "subset": label, **score(subset, raw)}
            if scales is not None:
                fixed = Forecasts([fixed_all[i] for i in members], raw.seconds)
                row = {"method": name, "subset": label, **score(subset, fixed),
                       "raw_cover80": row["cover80"], "scale80": scales["all"][0.8]}
            rows.append(row)
    return ForecastScores(pd.DataFrame(rows), "evaluation")


def ensemble_method(**settings) -> Method:
    """Forecast every task with the parametric ensemble, vectorised across tasks."""
    weighting = settings.pop("weighting", "backtest")
    return ensemble_methods(weighting, **settings)[0]


def ensemble_methods(*weightings: str, **settings) -> tuple[Method, ...]:
    """The ensemble under each of ``weightings`` (``"backtest"``, ``"equal"``), one method each.

    A task list asked of several of them is fitted once: the families' fits do
    not depend on the weighting (:func:`scalekit.surrogates._ensemble.fit_ensembles`).
    Each method's ``medians(tasks)`` gives its median forecasts alone, without
    the other quantiles.
    """
    from scalekit.surrogates._ensemble import fit_ensembles

    def fitted(tasks):
        x, y, mask, xt = pad(tasks)
        return xt, fit_ensembles(x, y, mask, weightings=weightings, **settings)
    if len(weightings) > 1:   # the members ask of one list in turn: the last two suffice
        fitted = remembered(fitted, last=2)

    def member(k: int) -> Method:
        def answer(tasks, qs):
            xt, states = fitted(tasks)
            q = states[k].quantiles(xt, qs)
            return [q[i, : t.x_target.size] for i, t in enumerate(tasks)]

        def method(tasks):
            return answer(tasks, QUANTILES)
        method.medians = lambda tasks: [q[:, 0] for q in answer(tasks, np.array([0.5]))]
        return method
    return tuple(member(k) for k in range(len(weightings)))


def estimator_method(make: Callable[[], object]) -> Method:
    """Forecast each task with a fresh per-curve estimator from ``make()``."""
    def method(tasks):
        return [make().fit(t.x, t.y).predict_quantiles(t.x_target, QUANTILES) for t in tasks]
    return method


def joint_method(**settings) -> Method:
    """Forecast every group of tasks with one joint surrogate fitted across its runs."""
    from scalekit.surrogates._joint import JointSurrogate

    def method(tasks):
        out: list[np.ndarray | None] = [None] * len(tasks)
        groups: dict[str, list[int]] = {}
        for i, t in enumerate(tasks):
            groups.setdefault(t.group, []).append(i)
        for members in groups.values():
            runs = np.concatenate([[tasks[i].run] * tasks[i].x.size for i in members])
            x = np.concatenate([tasks[i].x for i in members])
            y = np.concatenate([tasks[i].y for i in members])
            sizes = np.concatenate([[tasks[i].size] * tasks[i].x.size for i in members])
            model = JointSurrogate(**settings).fit(
                x, y, runs=runs, sizes=None if np.isnan(sizes).any() else sizes)
            for i in members:
                t = tasks[i]
                out[i] = model.predict_quantiles(t.x_target, QUANTILES,
                                                 runs=np.full(t.x_target.size, t.run))
        return out
    return method


def paper_m4_method() -> Method:
    """M4 as Alabdulmohsin et al. (2022) fit it, with their settings for each task's domain.

    The domain is the first ``|``-separated part of the task's group (``IC``,
    ``BB``, ``NMT``, ``LM``: :data:`~scalekit.surrogates._paper_m4.PAPER_SETTINGS`);
    any other gets an initial L0 of 1 and no upper bound.
    """
    from scalekit.surrogates._paper_m4 import PAPER_SETTINGS, PaperM4, fit_paper_m4

    def fitted(tasks):
        if not tasks:
            return []
        settings = [PAPER_SETTINGS.get(t.group.split("|")[0], (1.0, None)) for t in tasks]
        return fit_paper_m4([PaperM4(upper=upper, l0_start=l0_start)
                             for l0_start, upper in settings], [(t.x, t.y) for t in tasks])

    def method(tasks):
        return [model.predict_quantiles(t.x_target, QUANTILES)
                for model, t in zip(fitted(tasks), tasks, strict=True)]
    method.medians = lambda tasks: [model.predict(t.x_target)
                                    for model, t in zip(fitted(tasks), tasks, strict=True)]
    return method


def remembered(method: Method, *, last: int | None = None) -> Method:
    """``method``, answering a repeated call on the same task list from memory (of the
    ``last`` task lists asked, or of all)."""
    memory: dict[int, tuple[Sequence[Task], list[np.ndarray]]] = {}

    def wrapped(tasks):
        key = id(tasks)
        if key not in memory or memory[key][0] is not tasks:
            memory[key] = (tasks, method(tasks))
            while last is not None and len(memory) > last:
                memory.pop(next(iter(memory)))          # the oldest
        return memory[key][1]
    return wrapped


def averaged_method(*methods: Method) -> Method:
    """Average the methods' quantiles in log space (quantile averaging, 'Vincentisation').

    The combined median is the geometric mean of the medians; each interval
    edge is the geometric mean of the edges.
    """
    def method(tasks):
        runs = [m(tasks) for m in methods]
        return [np.exp(np.mean([np.log(r[i]) for r in runs], axis=0)) for i in range(len(tasks))]
    return method


def stacking_weights(errors: np.ndarray, *, smooth: float = 1e-4) -> np.ndarray:
    """Simplex weights minimising the mean absolute error of a weighted sum of errors.

    ``errors`` (n, K): log error of each of K candidates on n calibration tasks.
    Returns w >= 0 summing to 1 minimising ``mean_i |sum_k w_k errors[i, k]|``
    (the absolute value smoothed as ``sqrt(e**2 + smooth**2)``). The problem is
    convex, so the local optimum SLSQP finds is the global one; it starts from
    the best single candidate.
    """
    errors = np.asarray(errors, dtype=float)
    n, k = errors.shape
    if n == 0:
        return np.full(k, 1.0 / k)

    def objective(w):
        e = errors @ w
        root = np.sqrt(e ** 2 + smooth ** 2)
        return root.mean(), errors.T @ (e / root) / n

    start = np.zeros(k)
    start[np.argmin(np.abs(errors).mean(axis=0))] = 1.0
    sol = minimize(objective, start, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                   constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0,
                                 "jac": lambda w: np.ones_like(w)}],
                   options={"maxiter": 500, "ftol": 1e-12})
    w = np.clip(sol.x, 0.0, None) if np.isfinite(sol.x).all() else start
    w = w / w.sum()
    return w if objective(w)[0] <= objective(start)[0] else start


class StackedMethod:
    """Candidate methods averaged in log space with weights learned on calibration truths.

    Stacking (Wolpert 1992; Breiman 1996) of quantile forecasts: each quantile
    is the weighted geometric mean of the candidates' quantiles
    (Vincentisation, as :func:`averaged_method` with weights). The weights
    minimise the mean absolute log error of the median at the final held-out
    point of the *calibration* tasks (:func:`stacking_weights`); the truths of
    every other task are never read. Each calibration task itself is forecast
    with weights learned on the other ``folds - 1`` folds of calibration runs
    (cross-fitting), so that interval recalibration on those tasks sees honest,
    out-of-sample errors.

    Intervals: the combined median's log error is taken as normal with
    standard deviation ``s * sqrt(h0**2 + h**2)``, ``h = ln(x / x_last)`` the
    horizon beyond the task's last observed point, and ``s**2`` the mean of
    ``e**2 / (h0**2 + h**2)`` over the cross-fitted errors ``e`` of every held-out
    point of the calibration tasks. (The candidates' averaged intervals are
    sized for the candidates' own, larger errors, and their shape follows
    where the candidates disagree rather than where the combination errs.)
    Called without calibration tasks (as in a forecast with no truths), the
    candidates share equal weights and their averaged quantiles are returned.

    Parameters
    ----------
    candidates : mapping of str to method
        The methods to combine (wrap them with :func:`remembered` to reuse runs).
    folds : int
        Folds of the calibration runs for cross-fitting (at most one per run);
        more folds make the cross-fitted weights, learned on ``(folds - 1) /
        folds`` of the runs, closer to the final ones learned on all.
    seed : int
        Seed of the assignment of calibration runs to folds.
    h0 : float
        Horizon (in e-folds of x) below which the interval stops narrowing.

    Attributes
    ----------
    weights_ : dict
        Candidate name to weight learned on all calibration tasks, from the last call.
    spread_ : float or None
        ``s`` of the interval model (None without calibration tasks).
    """

    learns_from_calibration = True

    def __init__(self, candidates: Mapping[str, Method], *, folds: int = 10, seed: int = 0,
                 h0: float = 0.1) -> None:
        self.candidates = dict(candidates)
        self.folds = folds
        self.seed = seed
        self.h0 = h0

    def __call__(self, tasks: Sequence[Task], calibration: Sequence[int] = ()) -> list[np.ndarray]:
        check_number("folds", self.folds, low=1, integer=True)
        check_number("h0", self.h0, low=0.0, low_open=True)
        runs = [[np.log(np.asarray(q)[: t.x_target.size]) for q, t in zip(m(tasks), tasks, strict=True)]
                for m in self.candidates.values()]
        median = median_column()
        calibration = np.asarray(calibration, dtype=int)
        errors = np.array([[run[i][-1, median] - np.log(tasks[i].y_target[-1]) for run in runs]
                           for i in calibration]).reshape(calibration.size, len(runs))
        w_all = stacking_weights(errors)
        self.weights_ = dict(zip(self.candidates, w_all.tolist(), strict=True))
        weights = np.tile(w_all, (len(tasks), 1))
        names = sorted({tasks[i].run for i in calibration})
        order = np.random.default_rng(self.seed).permutation(len(names))
        folds = min(self.folds, len(names))
        fold_of_run = {names[j]: rank % max(folds, 1) for rank, j in enumerate(order)}
        fold = np.array([fold_of_run[tasks[i].run] for i in calibration], dtype=int)
        for f in range(folds if folds >= 2 else 0):
            weights[calibration[fold == f]] = stacking_weights(errors[fold != f])
        combined = [sum(wk * run[i] for wk, run in zip(weights[i], runs, strict=True) if wk > 0)
                    for i in range(len(tasks))]
        self.spread_ = None
        if calibration.size == 0:
            return [np.exp(q) for q in combined]
        ratios = np.concatenate([(combined[i][:, median] - np.log(tasks[i].y_target))
                                 / horizon_reach(tasks[i], self.h0) for i in calibration])
        self.spread_ = float(np.sqrt(np.mean(ratios ** 2)))
        z = ndtri(QUANTILES)
        return [np.exp(q[:, median, None]
                       + self.spread_ * horizon_reach(t, self.h0)[:, None] * z[None, :])
                for q, t in zip(combined, tasks, strict=True)]


def rmse_log(task: Task, quantiles: np.ndarray) -> float:
    """Root mean square of ln(median forecast) - ln(truth) over the task's held-out points."""
    median = np.asarray(quantiles)[: task.x_target.size, median_column()]
    return float(np.sqrt(np.mean((np.log(median) - np.log(task.y_target)) ** 2)))


def win_rate(errors: np.ndarray, reference: np.ndarray, *, decimals: int = 3) -> float:
    """Share of evaluations where ``errors`` beat ``reference``, ties counted as half.

    Both are truncated to ``decimals`` decimals first, as Alabdulmohsin et al.
    (2022) compare their estimators (``int(e * 1000) / 1000``).
    """
    factor = 10.0 ** decimals
    a = np.trunc(np.asarray(errors, float) * factor)
    b = np.trunc(np.asarray(reference, float) * factor)
    return float(np.mean((a < b) + 0.5 * (a == b)))


def holdout_benchmark(tasks: Sequence[Task], methods: Mapping[str, Method], *,
                      reference: str, by: Callable[[Task], str] = lambda t: t.group
                      ) -> ForecastScores:
    """The benchmark protocol of Alabdulmohsin, Neyshabur & Zhai (2022) on marked curves.

    Each task is one evaluation (its prefix: the rows marked for fitting; its
    targets: every held-out row). A :class:`ForecastScores` whose ``table`` has, per
    label of ``by`` (their Domain, column ``group``) and method:
    ``rmse_log``, the mean over evaluations of :func:`rmse_log`;
    ``ratio_to_reference``, that mean over the reference method's;
    ``win_rate_vs_reference`` (:func:`win_rate`, per evaluation against
    ``reference``, one of ``methods``); ``cover50/80/95``, the share of all the
    label's held-out points inside the central 50/80/95% intervals; and
    ``n_evaluations``. No truth reaches any method.
    """
    if reference not in methods:
        raise fail("reference", reference, "one of the methods: " + ", ".join(methods))
    if not tasks:
        raise InputError("no curve has enough rows marked for fitting and one held out.")
    errors, inside = {}, {}
    for name, method in methods.items():
        quantiles = run_method(method, tasks).quantiles
        errors[name] = np.array([rmse_log(t, q) for t, q in zip(tasks, quantiles, strict=True)])
        inside[name] = {}
        for level in LEVELS:
            lo, hi = _level_columns(level)
            inside[name][level] = [(np.asarray(q)[: t.x_target.size, lo] <= t.y_target)
                                   & (t.y_target <= np.asarray(q)[: t.x_target.size, hi])
                                   for t, q in zip(tasks, quantiles, strict=True)]
    labels = np.array([by(t) for t in tasks])
    rows = []
    for label in sorted(set(labels)):
        members = np.flatnonzero(labels == label)
        base = errors[reference][members].mean()
        for name in methods:
            e = errors[name][members]
            row = {"group": label, "method": name, "rmse_log": float(e.mean()),
                   "ratio_to_reference": float(e.mean() / base) if base > 0 else float("nan"),
                   "win_rate_vs_reference": win_rate(e, errors[reference][members])}
            for level in LEVELS:
                row[f"cover{int(level * 100)}"] = float(
                    np.concatenate([inside[name][level][i] for i in members]).mean())
            row["n_evaluations"] = int(members.size)
            rows.append(row)
    return ForecastScores(pd.DataFrame(rows), "benchmark", reference)


def calibration_split(tasks: Sequence[Task], *, seed: int = 0) -> tuple[list[Task], list[Task]]:
    """Split tasks by run into two halves (calibration, report), reproducibly from ``seed``."""
    runs = sorted({t.run for t in tasks})
    rng = np.random.default_rng(seed)
    chosen = set(rng.permutation(runs)[: len(runs) // 2].tolist())
    return ([t for t in tasks if t.run in chosen], [t for t in tasks if t.run not in chosen])
