"""Replay benchmark of ``scalekit.design`` on ScaleBench (Li et al. 2026).

Their protocol: for each task a pool of runnable experiments (costs as in their
registry) and a held-out high-cost target region; a method chooses runs, seeing a
run's loss only once chosen, until the budget (a share of the pool's total cost)
is spent; the task's law (``bench/scalebench_tasks.py``) is then fitted to the
chosen runs with the shared engine and scored by R² on the target, clipped to
[-1, 1]; a task with groups is one design per group and one R² over all of them.
Every method, every task, one setting for all (no per-task tuning). ``cheapest`` is
deterministic and runs once per budget. Budgets are given as the task's low, middle
and high share (1/5/10%, or 20/35/50% for ``sparsity`` and ``domain_mixture``).

Per task and budget it also prints the paired difference (by seed) of ``ensemble``
against ``v_optimal`` and ``random`` with its standard error; with target losses it
prints the 95% intervals' coverage of the target rows.

Targets (PASS/FAIL): at the middle budget, the mean R² of ``ensemble`` at least the
paper's method on farseer (0.88), data_constrained (0.85) and vocab (0.98), and above
V-optimal's on at least four of the tasks; at the low budget, above random's on every
task. Each verdict line also gives the difference it rests on with its standard error
over the seeds (paired by seed against random), and says when that difference is within
two standard errors, i.e. when these seeds do not decide it.

    python bench/design_benchmark.py [--tasks farseer,...] [--levels 0,1,2]
        [--repeats 10] [--methods random,...] [--first-seed 0] [--json OUT]
        [--objective squared] [--delta D] [--scale raw]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from scalebench_tasks import BUDGETS, DEFAULT_BUDGETS, PAPER, TASKS, r2

from scalekit.design import METHODS, final_answer, replay

OURS = "ensemble"
#: Tasks whose middle-budget R² must reach the paper's method's.
MATCH_PAPER = ("farseer", "data_constrained", "vocab")


def predict(task, group, result, seed, estimator) -> tuple[np.ndarray, np.ndarray]:
    """The target predictions of every output of ``task`` from the runs ``result`` chose
    and their 95% prediction intervals (n, 2), fitted as the design's final answer is
    (:func:`scalekit.design.final_answer`; NaN where it cannot fit them)."""
    rows = np.array([c["row"] for c in result.chosen], dtype=int)
    values, bands = [], []
    for law, y in task.outputs:
        if len(task.outputs) == 1:
            predictions = result.predictions
        else:
            frame = group.pool.frame.iloc[rows]
            predictions = final_answer(law, {c: frame[c].to_numpy(float) for c in law.inputs},
                                       task.sign * frame[y].to_numpy(float), group.target,
                                       pool=group.pool.frame, seed=seed, **estimator)[0]
        if not predictions:
            values.append(np.full(len(group.target), np.nan))
            bands.append(np.full((len(group.target), 2), np.nan))
            continue
        values.append(np.array([p["prediction"] for p in predictions]))
        bands.append(np.array([p["interval"] or [np.nan, np.nan] for p in predictions]))
    band = task.sign * np.stack(bands, axis=1).reshape(-1, 2)
    return task.sign * np.stack(values, axis=1).ravel(), np.sort(band, axis=1)


def score(task, share, method, seed, estimator=None) -> tuple[float, float]:
    """Target R² of one replay of ``method`` at ``share`` of each group's pool, and the
    share of the target rows with an interval that their 95% prediction interval holds
    (NaN without intervals)."""
    estimator = estimator or {}
    predictions, bands = [], []
    for k, group in enumerate(task.groups):
        result = replay(task.law, group.pool, group.target, budget=share * group.pool.cost.sum(),
                        method=method, seed=seed * 1000 + k, **estimator)
        value, band = predict(task, group, result, seed, estimator)
        predictions.append(value)
        bands.append(band)
    y, band = task.y_test, np.concatenate(bands)
    has = np.isfinite(band).all(axis=1)
    held = (band[has, 0] <= y[has]) & (y[has] <= band[has, 1])
    coverage = float(held.mean()) if has.any() else float("nan")
    return r2(y, np.concatenate(predictions)), coverage


def run_task(task, levels, methods, repeats, first=0, estimator=None, coverage=None):
    """R² per (level, method) over the seeds; ``coverage`` (a dict) gathers the
    intervals' coverage the same way."""
    scores = {}
    for level in levels:
        share = task.budgets[level]
        for method in methods:
            runs = 1 if method == "cheapest" else repeats
            pairs = [score(task, share, method, seed, estimator)
                     for seed in range(first, first + runs)]
            values = [a for a, _ in pairs]
            scores[(level, method)] = values
            if coverage is not None:
                coverage[(level, method)] = [b for _, b in pairs]
            print(f"  {task.name:17s} {share:5.0%} {method:12s} "
                  f"{np.mean(values):6.3f} ± {np.std(values):.3f}  (n={len(values)}; "
                  f"coverage {np.nanmean([b for _, b in pairs]):.0%})", flush=True)
    return scores


def difference(a, b) -> str:
    """``mean(a) - mean(b)`` with its standard error: paired by seed where both have one
    value per seed, else the two means' errors combined (one value, e.g. ``cheapest``,
    counts as exact)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == len(b) > 1:
        d = a - b
        se = d.std(ddof=1) / np.sqrt(len(d))
    else:
        se = float(np.sqrt(sum(v.var(ddof=1) / len(v) for v in (a, b) if len(v) > 1)))
    diff = a.mean() - b.mean()
    decided = "" if abs(diff) > 2 * se else ", within 2 s.e.: not decided by these seeds"
    return f"difference {diff:+.3f} ± {se:.3f} s.e.{decided}"


def verdicts(scores, tasks):
    lines = []
    for name in MATCH_PAPER:
        if name in tasks and (1, OURS) in scores[name]:
            ours, paper = scores[name][(1, OURS)], PAPER[name][1][0]
            lines.append((f"middle: {name} mean R² {np.mean(ours):.3f} >= paper's {paper} "
                          f"({difference(ours, [paper])})", np.mean(ours) >= paper))
    both = [name for name in tasks if {(1, OURS), (1, "v_optimal")} <= set(scores[name])]
    above = [name for name in both
             if np.mean(scores[name][(1, OURS)]) > np.mean(scores[name][(1, "v_optimal")])]
    if both:
        lines.append(((f"middle: above V-optimal on {len(above)} of {len(both)} tasks "
                       f"({', '.join(above)}), target >= 4"), len(above) >= min(4, len(both))))
        for name in both:
            lines.append((f"  middle: {name} against V-optimal: "
                          f"{difference(scores[name][(1, OURS)], scores[name][(1, 'v_optimal')])}",
                          None))
    for name in tasks:
        for level in sorted({lv for lv, _ in scores[name]}):
            for other in ("v_optimal", "random"):
                if {(level, OURS), (level, other)} <= set(scores[name]):
                    lines.append((f"  paired: {name} level {level} against {other}: " + difference(
                        scores[name][(level, OURS)], scores[name][(level, other)]), None))
    for name in tasks:
        if {(0, OURS), (0, "random")} <= set(scores[name]):
            ours, random = (scores[name][(0, m)] for m in (OURS, "random"))
            lines.append((f"low: {name} {np.mean(ours):.3f} > random {np.mean(random):.3f} "
                          f"({difference(ours, random)})", np.mean(ours) > np.mean(random)))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--levels", default="0,1,2",
                        help="the task's budgets by rank: 0 low (1%%), 1 middle, 2 high")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds run from here (the report uses 0; develop on others)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--objective", default=None, help="loss of the criterion and final fit")
    parser.add_argument("--delta", type=float, default=None)
    parser.add_argument("--scale", default=None, help="log or raw")
    args = parser.parse_args()
    estimator = {k: v for k, v in (("loss", args.objective), ("delta", args.delta),
                                   ("scale", args.scale)) if v is not None}
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    tasks = args.tasks.split(",")
    levels = [int(v) for v in args.levels.split(",")]
    methods = args.methods.split(",")
    started = time.perf_counter()
    scores = {}
    for name in tasks:
        print(f"{name}:", flush=True)
        scores[name] = run_task(TASKS[name](), levels, methods, args.repeats,
                                args.first_seed, estimator)
    print(f"\nmean R² ± sd on the target region ({time.perf_counter() - started:.0f} s); "
          "paper (Table 2): their method / V-optimal / random")
    for name in tasks:
        for level in levels:
            paper = PAPER[name][level]
            cells = "  ".join(f"{m} {np.mean(scores[name][(level, m)]):.2f}±"
                              f"{np.std(scores[name][(level, m)]):.2f}" for m in methods)
            print(f"{name:17s} {BUDGETS.get(name, DEFAULT_BUDGETS)[level]:4.0%}  {cells}"
                  f"   | paper {paper[0]:.2f} / {paper[1]:.2f} / {paper[2]:.2f}")
    print()
    for text, ok in verdicts(scores, tasks):
        print(f"{'' if ok is None else 'PASS' if ok else 'FAIL':4s}  {text}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({name: {f"{BUDGETS.get(name, DEFAULT_BUDGETS)[s]:g}/{m}": v
                                    for (s, m), v in table.items()}
                       for name, table in scores.items()}, handle, indent=1)


if __name__ == "__main__":
    main()
