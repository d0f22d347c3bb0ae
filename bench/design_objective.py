"""Which estimator a design fits by, chosen by leave-one-task-out on ScaleBench.

Each arm is a (loss, delta, scale) of :func:`scalekit.design.replay` (the criterion and
the final fit use it alike). Every arm is replayed on the six tasks
(``bench/scalebench_tasks.py``) at the low and middle budgets by ``ensemble``,
``v_optimal`` and ``random``; then, for each task in turn, the arm with the highest
mean target R² of ``ensemble`` over the other five tasks (both budgets) is chosen and
scored on the held-out one. The table prints per task x budget x method x arm the mean
R² (and the 95% intervals' coverage of the target rows), and per task which arm the
other five chose and what it scores there. Check (FAIL exits 1): the held-out choice
scores at least today's estimator (Huber, delta 1e-3, log) on at least four of six
tasks at the middle budget.

    python bench/design_objective.py [--repeats 2] [--levels 0,1] [--json OUT]
        [--from JSON]   (re-print the table of a saved run)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from design_benchmark import run_task
from scalebench_tasks import TASKS

ARMS = {"huber 1e-3 log (old)": {"loss": "huber", "delta": 1e-3, "scale": "log"},
        "huber auto log": {"loss": "huber", "delta": None, "scale": "log"},
        "squared log": {"loss": "squared", "scale": "log"},
        "squared raw": {"loss": "squared", "scale": "raw"}}
OLD = "huber 1e-3 log (old)"
METHODS = ("ensemble", "v_optimal", "random")


def measure(levels, repeats, first, methods, path=None, done=None):
    out = dict(done or {})
    for name in TASKS:
        for arm, estimator in ARMS.items():
            todo = [m for m in (*methods, *(("v_optimal",) if arm == OLD else ()))
                    if not all(f"{arm}|{name}|{level}|{m}" in out for level in levels)]
            if not todo:
                continue
            print(f"{arm} / {name}:", flush=True)
            coverage = {}
            scores = run_task(TASKS[name](), levels, list(dict.fromkeys(todo)), repeats, first,
                              estimator, coverage)
            for (level, method), values in scores.items():
                out[f"{arm}|{name}|{level}|{method}"] = {"r2": values,
                                                        "coverage": coverage[(level, method)]}
            if path:
                Path(path).write_text(json.dumps(out, indent=1))
    return out


def report(data, levels) -> bool:
    def cell(arm, name, level, method, what="r2"):
        values = data.get(f"{arm}|{name}|{level}|{method}", {}).get(what)
        return float(np.nanmean(values)) if values else float("nan")

    print("\nmean target R² (coverage of the 95% intervals) per task, budget level, method, arm")
    for name in TASKS:
        for level in levels:
            for method in METHODS:
                cells = "  ".join(f"{cell(a, name, level, method):6.3f} "
                                  f"({cell(a, name, level, method, 'coverage'):4.0%})"
                                  for a in ARMS)
                print(f"{name:17s} {level} {method:10s} {cells}")
    print("arms: " + " | ".join(ARMS))
    print("\nleave one task out: the arm the other five choose (ensemble's mean R² over them "
          "and the budgets)")
    wins = 0
    chosen = []
    for name in TASKS:
        others = [t for t in TASKS if t != name]
        complete = [t for t in others
                    if all(np.isfinite(cell(a, t, lv, "ensemble")) for a in ARMS for lv in levels)]
        merit = {a: np.mean([cell(a, t, lv, "ensemble") for t in complete for lv in levels])
                 for a in ARMS}
        arm = max(merit, key=merit.get)
        chosen.append(arm)
        mid = max(levels)
        held, old = cell(arm, name, mid, "ensemble"), cell(OLD, name, mid, "ensemble")
        vopt = cell(OLD, name, mid, "v_optimal")
        wins += held >= old
        covered = cell(arm, name, mid, "ensemble", "coverage")
        print(f"{name:17s} chosen {arm:22s} held-out R² (middle) {held:6.3f}  old {old:6.3f}  "
              f"v_optimal (old estimator) {vopt:6.3f}  coverage {covered:4.0%}")
    print(f"\nchosen in every fold: {sorted(set(chosen))}")
    ok = wins >= 4
    print(f"{'PASS' if ok else 'FAIL'}  the held-out choice >= the old estimator on {wins} of 6 tasks "
          "(target >= 4)")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--levels", default="0,1")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    parser.add_argument("--from", dest="source", default=None)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--resume", default=None, help="a saved JSON whose cells are kept")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    levels = [int(v) for v in args.levels.split(",")]
    if args.source:
        data = json.loads(Path(args.source).read_text())
    else:
        started = time.process_time()
        done = json.loads(Path(args.resume).read_text()) if args.resume else None
        data = measure(levels, args.repeats, args.first_seed, args.methods.split(","),
                       args.json, done)
        print(f"CPU {time.process_time() - started:.0f} s")
    sys.exit(0 if report(data, levels) else 1)


if __name__ == "__main__":
    main()
