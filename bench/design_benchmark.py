"""Replay benchmark of ``scalekit.design`` on ScaleBench (Li et al. 2026).

Their protocol: for each task a pool of runnable experiments (costs as in their
registry) and a held-out high-cost target region; a method chooses runs, seeing a
run's loss only once chosen, until the budget (a share of the pool's total cost)
is spent; the task's law (``bench/scalebench_tasks.py``) is then fitted to the
chosen runs with the shared engine and scored by R² on the target, clipped to
[-1, 1]. Every method, every task, one setting for all (no per-task tuning).
``cheapest`` is deterministic and runs once per budget.

Targets (PASS/FAIL): at 5%, the mean R² of ``ensemble`` at least the paper's method on
farseer (0.88), data_constrained (0.85) and vocab (0.98), and above V-optimal's on at
least four of the tasks; at 1%, above random's on every task.

    python bench/design_benchmark.py [--tasks farseer,...] [--budgets 1,5,10]
        [--repeats 10] [--methods random,...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from scalebench_tasks import PAPER_1, PAPER_5, TASKS, r2

from scalekit.design import METHODS, replay

OURS = "ensemble"


def run_task(task, budgets, methods, repeats):
    scores = {}
    for share in budgets:
        for method in methods:
            runs = 1 if method == "cheapest" else repeats
            values = []
            for seed in range(runs):
                result = replay(task.law, task.pool, task.target,
                                budget=share * task.pool.cost.sum(), method=method, seed=seed)
                prediction = task.sign * np.array([p["prediction"] for p in result.predictions])
                values.append(r2(task.y_test, prediction))
            scores[(share, method)] = values
            print(f"  {task.name:17s} {share:5.0%} {method:12s} "
                  f"{np.mean(values):6.3f} ± {np.std(values):.3f}  (n={len(values)})", flush=True)
    return scores


def verdicts(scores, tasks):
    lines = []
    for name, paper in PAPER_5.items():
        if name in tasks and name != "lr_bsz" and (0.05, OURS) in scores.get(name, {}):
            mean = np.mean(scores[name][(0.05, OURS)])
            lines.append((f"5%: {name} mean R² {mean:.3f} >= paper's {paper[0]}", mean >= paper[0]))
    above = [name for name in tasks if (0.05, OURS) in scores[name]
             and (0.05, "v_optimal") in scores[name]
             and np.mean(scores[name][(0.05, OURS)]) > np.mean(scores[name][(0.05, "v_optimal")])]
    lines.append(((f"5%: above V-optimal on {len(above)} of {len(tasks)} tasks ({', '.join(above)}),"
                  " target >= 4"), len(above) >= min(4, len(tasks))))
    for name in tasks:
        if (0.01, OURS) in scores[name] and (0.01, "random") in scores[name]:
            ours, random = (np.mean(scores[name][(0.01, m)]) for m in (OURS, "random"))
            lines.append((f"1%: {name} {ours:.3f} > random {random:.3f}", ours > random))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--budgets", default="1,5,10")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    tasks = args.tasks.split(",")
    budgets = [float(b) / 100 for b in args.budgets.split(",")]
    methods = args.methods.split(",")
    started = time.perf_counter()
    scores = {}
    for name in tasks:
        print(f"{name}:", flush=True)
        scores[name] = run_task(TASKS[name](), budgets, methods, args.repeats)
    print(f"\nmean R² ± sd on the target region ({time.perf_counter() - started:.0f} s); "
          "paper (Table 2): their method / V-optimal / random")
    for name in tasks:
        for share in budgets:
            paper = (PAPER_5 if share == 0.05 else PAPER_1 if share == 0.01 else {}).get(name)
            cells = "  ".join(f"{m} {np.mean(scores[name][(share, m)]):.2f}±"
                              f"{np.std(scores[name][(share, m)]):.2f}" for m in methods)
            print(f"{name:17s} {share:4.0%}  {cells}"
                  + (f"   | paper {paper[0]:.2f} / {paper[1]:.2f} / {paper[2]:.2f}" if paper else ""))
    print()
    for text, ok in verdicts(scores, tasks):
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({name: {f"{s:g}/{m}": v for (s, m), v in table.items()}
                       for name, table in scores.items()}, handle, indent=1)


if __name__ == "__main__":
    main()
