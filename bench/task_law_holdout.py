"""The task law's leave-the-largest-size-out record on OLMo's ladder (issue 38, items 1-2).

The 1B runs (the ladder's largest size, four token multiples) are predicted from the 12
smaller runs, for each step-1 intermediate (task bits-per-byte, C4 loss, task
cross-entropy), every task: mean and worst |error| of the accuracy (points), and the
share of the 32 held-out accuracies inside their 95% and 80% intervals (target 85-99% and
70-90%). The intermediate of least mean |error| is the one the held-out data choose.

    python bench/task_law_holdout.py [--bootstrap 100] [--x bpb c4 ce]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from scalekit.curves.readers._ladder import read_ladder
from scalekit.planners._task_law import evaluate_holdout

LADDER = Path(__file__).resolve().parents[1] / "data" / "published" / "olmo_ladder"


def record(runs, x: str, bootstrap: int) -> dict:
    """Errors and coverage of the held-out 1B runs for the intermediate ``x``."""
    out = {}
    for level in (0.95, 0.80):
        results = evaluate_holdout(runs, x=x, bootstrap=bootstrap, ci_level=level)
        predictions = [p for r in results for p in r.predictions]
        errors = np.array([p.error for p in predictions])
        inside = [p.accuracy_interval[0] <= p.actual <= p.accuracy_interval[1]
                  for p in predictions]
        out[level] = np.mean(inside)
        out["mean"], out["worst"], out["n"] = (float(np.mean(np.abs(errors))),
                                               float(np.max(np.abs(errors))), len(errors))
        out["width"] = float(np.median([p.accuracy_interval[1] - p.accuracy_interval[0]
                                        for p in predictions])) if level == 0.95 else out["width"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", type=int, default=100)
    parser.add_argument("--x", nargs="+", default=["bpb", "c4", "ce"])
    args = parser.parse_args()
    start = time.process_time()
    runs = read_ladder(sorted(LADDER.glob("*xC.csv")), LADDER / "final.json")
    print(f"{'x':>4} {'n':>3} {'mean|err|':>10} {'worst':>7} {'95% cover':>10} "
          f"{'80% cover':>10} {'95% width':>10}", flush=True)
    rows = {}
    for x in args.x:
        rows[x] = r = record(runs, x, args.bootstrap)
        print(f"{x:>4} {r['n']:>3} {100 * r['mean']:>10.2f} {100 * r['worst']:>7.2f} "
              f"{r[0.95]:>10.2f} {r[0.80]:>10.2f} {100 * r['width']:>10.2f}", flush=True)
    best = min(rows, key=lambda x: rows[x]["mean"])
    others = ", ".join(f"{x} {100 * r['mean']:.2f}" for x, r in rows.items() if x != best)
    print(f"held-out choice: {best} (mean |error| {100 * rows[best]['mean']:.2f} points; {others})")
    print(f"CPU {time.process_time() - start:.0f} s")


if __name__ == "__main__":
    main()
