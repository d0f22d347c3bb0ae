"""The sequential design loop: fit, choose, observe, refit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number, fail
from scalekit.design._belief import belief, prediction_interval
from scalekit.design._estimator import (DEFAULT_DELTA, DEFAULT_LOSS, DEFAULT_SCALE, Estimator,
                                        distinct_runs, final_fit)
from scalekit.design._methods import (METHODS, SCORING, baseline_pick, greedy_batch,
                                      spread_pick, start_pick, with_discrepancy)
from scalekit.design._pool import Pool, numbers
from scalekit.design._result import DesignResult
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError

#: In a replay without a set batch, each refit adds this share of the runs observed.
REFIT_GROWTH = 0.25
#: The starting design of ``ensemble``: up to this many runs per parameter of the law,
#: within this share of the pool's cost (Li et al. 2026: 2.5 per parameter, within 2%).
START_PER_PARAM, START_SHARE = 2.5, 0.02
#: ... and within this share of the budget, beyond the P + 1 runs a fit needs: the rest is
#: left for the model-guided picks (at a small budget the cheapest runs, far from the
#: target, could otherwise take all of it and no pick would ever use the model).
START_BUDGET_SHARE = 0.5
REASONS = {"random": "drawn at random among the affordable runs",
           "cheapest": "the cheapest affordable run",
           "cost_random": "drawn at random, with probability inversely proportional to cost",
           "start": "starting design: the cheapest affordable run (far from the runs chosen "
                    "among equally cheap ones)",
           "spread": "starting design: a cheap run far (in log inputs) from the runs chosen"}


def replay(law, pool: Pool, target: pd.DataFrame, *, budget: float, method: str = "ensemble",
           batch: int | None = None, seed: int = 0, loss: str = DEFAULT_LOSS,
           delta: float | None = DEFAULT_DELTA, scale: str = DEFAULT_SCALE) -> DesignResult:
    """Run the design on a pool whose losses are known, revealing each only when its run
    is chosen, until no affordable run is left within ``budget``.

    Parameters
    ----------
    law : Law
    pool : Pool
        With ``loss``.
    target : DataFrame
        The rows (law inputs) whose predictions matter.
    budget : float
        Total cost allowed, in the pool's cost unit.
    method : str
        One of :data:`~scalekit.design._methods.METHODS`.
    batch : int, optional
        Runs chosen per refit; by default a quarter of the runs observed so far (at least 1).
    seed : int
    loss, delta, scale : the estimator of the criterion and of the final fit
        (:func:`~scalekit.design.final_fit`): ``loss`` one of ``huber``, ``squared``,
        ``soft_l1`` on the ``log`` values, or least squares on the ``raw`` values;
        ``delta`` the threshold of ``huber`` and ``soft_l1`` (None: 1.345 robust standard
        deviations of the residuals).
    """
    if pool.loss is None:
        raise fail("pool", "a pool without losses", "a pool with known losses for a replay")
    return _design(law, pool, target, budget=budget, method=method, batch=batch, seed=seed,
                   observed=None, reveal=True, estimator=Estimator(loss, delta, scale))


def propose(law, pool: Pool, target: pd.DataFrame, *, budget: float, method: str = "ensemble",
            observed: tuple[pd.DataFrame, np.ndarray] | None = None, batch: int = 1,
            seed: int = 0, loss: str = DEFAULT_LOSS, delta: float | None = DEFAULT_DELTA,
            scale: str = DEFAULT_SCALE) -> DesignResult:
    """The next ``batch`` runs from ``pool`` (within ``budget``) given the ``observed`` runs
    (a frame of law inputs and their losses); with too few observed to fit the law, a
    starting design. ``loss``, ``delta``, ``scale`` as :func:`replay`."""
    batch = check_number("batch", batch, low=1, integer=True)
    return _design(law, pool, target, budget=budget, method=method, batch=batch, seed=seed,
                   observed=observed, reveal=False, estimator=Estimator(loss, delta, scale))


def _design(law, pool, target, *, budget, method, batch, seed, observed, reveal, estimator):
    check_choice("method", method, METHODS)
    check_number("budget", budget, low=0, low_open=True)
    check_number("seed", seed, low=0, integer=True)
    if batch is not None:
        check_number("batch", batch, low=1, integer=True)
    for name, frame in (("pool", pool.frame), ("target", target)):
        missing = [c for c in law.inputs if c not in frame]
        if missing:
            raise fail(name, f"a table without {', '.join(missing)}",
                       f"a table with the law's inputs ({', '.join(law.inputs)})")
    for c in law.inputs:
        numbers(pool.frame, c, "pool")
    rng = np.random.default_rng(seed)
    P = len(law.params)
    Xt = {c: numbers(target, c, "target") for c in law.inputs}
    if observed is not None:
        runs, y0 = observed
        missing = [c for c in law.inputs if c not in runs]
        if missing:
            raise fail("observed", f"a table without {', '.join(missing)}",
                       f"a table with the law's inputs ({', '.join(law.inputs)})")
        X0 = {c: numbers(runs, c, "observed") for c in law.inputs}
        y0 = numbers(pd.DataFrame({"loss": np.asarray(y0, dtype=object)}), "loss", "observed",
                     positive=True)
    else:
        X0, y0 = {c: np.zeros(0) for c in law.inputs}, np.zeros(0)
    features, toward = _features(pool.frame, target, law.inputs)
    taken = _already_run(pool, X0, law.inputs)
    chosen: list[dict] = []
    money = float(budget)
    warm = None
    step = 0
    start_size = max(P + 1, math.ceil(START_PER_PARAM * P))
    start_money = min(START_SHARE * float(pool.cost.sum()), START_BUDGET_SHARE * float(budget))
    while True:
        affordable = ~taken & (pool.cost <= money)
        left = batch if not reveal else None
        if not affordable.any() or (left is not None and len(chosen) >= left):
            break
        rows = np.flatnonzero(taken)
        n_obs = len(y0) + (len(rows) if reveal else 0)
        picks: list[tuple[int, str, dict]] = []
        scoring = SCORING.get(method)
        if scoring is None:
            j = baseline_pick(method, pool.cost, affordable, rng)
            picks.append((j, REASONS[method], {}))
        elif not scoring.cheapest_start and n_obs < P + 1:
            picks.append((spread_pick(features, pool.cost, affordable, np.flatnonzero(taken)),
                          REASONS["spread"], {}))
        elif scoring.cheapest_start and n_obs < start_size and (j := start_pick(
                features, pool.cost, affordable, np.flatnonzero(taken), start_money,
                n_obs < P + 1)) is not None:
            start_money -= pool.cost[j]
            picks.append((j, REASONS["start"], {}))
        else:
            X, y = _observed(law, pool, X0, y0, rows if reveal else rows[:0])
            near = None
            if scoring.discrepancy:
                distance = _distance(X, law.inputs, pool.frame, target)
                near = distance <= np.median(distance)
            post = belief(law, X, y, ensemble=scoring.ensemble, warm=warm, rng=rng, near=near,
                          estimator=estimator)
            if post is None:
                picks.append((baseline_pick("random", pool.cost, affordable, rng),
                              "drawn at random: the law cannot be fitted to the runs yet", {}))
            else:
                warm = post.members
                k = (batch - len(chosen) if not reveal else batch if batch is not None
                     else max(1, math.ceil(REFIT_GROWTH * n_obs)))
                picks += _model_picks(law, method, post, pool, Xt, affordable, money, k,
                                      (features, toward))
        step += 1
        for row, reason, extra in picks:
            if pool.cost[row] > money:
                break
            taken[row] = True
            money -= pool.cost[row]
            entry = {"row": row, "inputs": {c: float(pool.frame[c].iloc[row])
                                            for c in law.inputs},
                     "cost": float(pool.cost[row]), "step": step, "reason": reason, **extra,
                     "settings": _settings(pool.frame.iloc[row], law.inputs)}
            if reveal:
                entry["loss"] = float(pool.loss[row])
            chosen.append(entry)
    return _result(law, pool, target, method, budget, reveal, chosen, X0, y0, rng, estimator)


def _already_run(pool: Pool, X0: dict, inputs) -> np.ndarray:
    """Pool rows whose inputs match an observed run (never proposed again)."""
    if not len(next(iter(X0.values()), [])):
        return np.zeros(len(pool), dtype=bool)
    mine = np.stack([np.log(np.abs(pool.frame[c].to_numpy(float)) + 1e-300) for c in inputs], 1)
    seen = np.stack([np.log(np.abs(X0[c]) + 1e-300) for c in inputs], 1)
    return (np.abs(mine[:, None, :] - seen[None, :, :]) < 1e-9).all(axis=2).any(axis=1)


def _model_picks(law, method, post, pool, Xt, affordable, money, k, features):
    """The greedy batch of ``method`` under the posterior ``post``, with its reasons."""
    candidates = np.flatnonzero(affordable)
    X = {c: np.concatenate([Xt[c], pool.frame[c].to_numpy(float)[candidates]]) for c in law.inputs}
    F, A = post.factor(law, X)
    n_target = len(next(iter(Xt.values())))
    noise = post.noise_at(law, {c: v[n_target:] for c, v in X.items()})
    if post.discrepancy > 0:
        F, A, own = with_discrepancy(F, A, features[1], features[0][candidates],
                                     post.discrepancy)
        noise = noise + own[n_target:]
    weights = None
    if SCORING[method].in_values:
        # in the values' units, as a target's error is scored: Var(y) ~ y^2 Var(log y)
        weights = np.abs(post.predict(law, Xt))
        weights = weights if np.isfinite(weights).all() else None
    picks = []
    for j, score, share in greedy_batch(method, F, A, n_target, pool.cost[candidates], money, k,
                                        noise, weights):
        row = int(candidates[j])
        picks.append((row, (f"expected to remove {share:.1%} of the target's predictive variance "
                      f"for cost {pool.cost[row]:.3g}"), {"variance_reduction": share,
                                                         "score": score}))
    return picks


def _settings(row: pd.Series, inputs) -> dict:
    """The pool row's other columns (what a trainer needs to run it: ``scalekit train``'s
    ``width``, ``depth``, ``data``, ``steps``, ``task``, ... when the pool carries them)."""
    out = {}
    for name, value in row.items():
        if name in inputs or str(name).startswith("_"):
            continue
        out[str(name)] = value.item() if hasattr(value, "item") else value
    return out


def _observed(law, pool, X0, y0, rows):
    X = {c: np.concatenate([X0[c], pool.frame[c].to_numpy(float)[rows]]) for c in law.inputs}
    return X, np.concatenate([y0, pool.loss[rows]]) if len(rows) else y0


def _features(frame: pd.DataFrame, target: pd.DataFrame, names, observed: dict | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The pool's (or the ``observed`` inputs') and the target's inputs standardised by
    the pool's spread, in log where the pool's and the target's are all positive."""
    rows, toward = [], []
    for name in names:
        x, t = frame[name].to_numpy(dtype=float), target[name].to_numpy(dtype=float)
        o = x if observed is None else np.asarray(observed[name], dtype=float)
        logged = (x > 0).all() and (t > 0).all() and (o > 0).all()
        x, t, o = (np.log(x), np.log(t), np.log(o)) if logged else (x, t, o)
        scale = x.std() if x.std() > 0 else 1.0
        rows.append((o - x.mean()) / scale)
        toward.append((t - x.mean()) / scale)
    return np.stack(rows, axis=1), np.stack(toward, axis=1)


def _distance(X: dict, names, frame: pd.DataFrame, target: pd.DataFrame) -> np.ndarray:
    """Each observed run's distance to the nearest target row, in standardised inputs."""
    mine, toward = _features(frame, target, names, observed=X)
    return np.linalg.norm(mine[:, None, :] - toward[None, :, :], axis=-1).min(axis=1)


def _result(law, pool, target, method, budget, reveal, chosen, X0, y0, rng, estimator
            ) -> DesignResult:
    rows = np.array([c["row"] for c in chosen], dtype=int)
    plan_cost = float(pool.cost[rows].sum()) if len(rows) else 0.0
    X, y = _observed(law, pool, X0, y0, rows if reveal else rows[:0])
    predictions, values, diagnostics = final_answer(
        law, X, y, target, pool=pool.frame, loss=estimator.loss, delta=estimator.delta,
        scale=estimator.scale, seed=int(rng.integers(2**31)))
    return DesignResult(method=method, law={"name": law.name, "formula": law.formula,
                                            "inputs": list(law.inputs)},
                        budget=float(budget), replay=reveal, chosen=chosen,
                        spent=plan_cost / float(pool.cost.sum()), plan_cost=plan_cost,
                        predictions=predictions, fit=values, diagnostics=diagnostics,
                        estimator={"loss": estimator.loss, "delta": estimator.delta,
                                   "scale": estimator.scale})


def final_answer(law, X, y, target: pd.DataFrame, *, pool: pd.DataFrame,
                 loss: str = DEFAULT_LOSS, delta: float | None = DEFAULT_DELTA,
                 scale: str = DEFAULT_SCALE, seed: int = 0) -> tuple[list, dict | None, list]:
    """What the runs ``(X, y)`` predict at the ``target`` rows: the final fit by ``loss``,
    ``delta``, ``scale`` (:func:`~scalekit.design.final_fit`) and a 95% prediction interval for a new run
    at each row (:func:`~scalekit.design._belief.prediction_interval`; the runs nearer
    the target than their median, in the ``pool``'s standardised inputs, measure the
    law's discrepancy). Returns the predictions, the fit's values and the diagnostics."""
    estimator = Estimator(loss, delta, scale)
    rng = np.random.default_rng(seed)
    P = len(law.params)
    diagnostics = []
    if len(y) < 2:
        return [], None, [_too_few(len(y), P)]
    try:
        fit = final_fit(law, X, y, loss=estimator.loss, delta=estimator.delta,
                        scale=estimator.scale, seed=int(rng.integers(2**31)))
    except InputError as error:
        return [], None, [Diagnostic("not_converged", "warning", str(error))]
    Xt = {c: target[c].to_numpy(dtype=float) for c in law.inputs}
    centre = fit.predict(Xt)
    distance = _distance(X, law.inputs, pool, target)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi, _ = prediction_interval(law, fit, X, y, Xt,
                                                  near=distance <= np.median(distance),
                                                  estimator=estimator, rng=rng)
    diagnostics += [d for d in fit.diagnostics if d.severity != "info"]
    if not np.isfinite(lo).all():
        diagnostics.append(_too_few(distinct_runs(law, X), P, fitted=True))
    predictions = [{"inputs": {c: float(Xt[c][i]) for c in law.inputs},
                    "prediction": float(centre[i]),
                    "interval": [float(lo[i]), float(hi[i])] if np.isfinite([lo[i], hi[i]]).all()
                    else None}
                   for i in range(len(target))]
    return predictions, dict(fit.values), diagnostics


def _too_few(n: int, P: int, *, fitted: bool = False) -> Diagnostic:
    """The runs a law of ``P`` parameters needs beyond ``n`` for a fit with an interval:
    ``P + 1`` distinct runs (one degree of freedom for the noise)."""
    more = max(P + 1 - n, 1)
    what = ("the fit is the most probable law under a weak prior and states no interval"
            if fitted else "the fit is not identified")
    return Diagnostic("few_points", "warning", f"{n} distinct runs observed for a law of {P} "
                      f"parameters: {what}; observe {more} more distinct run"
                      f"{'s' if more > 1 else ''} for a prediction interval", value=n)
