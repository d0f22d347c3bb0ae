"""The two-step task law (Bhagia et al. 2024): coverage on synthetic ladders, and 7B-4T.

1. Coverage: ``--ladders`` synthetic ladders with a known truth
   (:mod:`scalekit.planners._ladder_synthetic`: 16 runs like OLMo's, a run offset,
   checkpoint and evaluation noise), each predicting a new 7B-4T-sized run drawn the
   same way; target: the 95% intervals hold its accuracy on 90–98% of the ladders.
2. OLMo's 7B-4T predicted from the 16 ladder runs alone (data/published/olmo_ladder),
   every task; targets: |error| <= 2 points on MMLU, HellaSwag, PIQA, SocialIQA and
   the actual inside its 95% interval on >= 7 of 8 tasks.

    python bench/bench_task_law.py [--ladders 200] [--bootstrap 200] [--x bpb]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from scalekit.curves.readers._ladder import read_ladder
from scalekit.planners._ladder_synthetic import synthetic_ladder, synthetic_run
from scalekit.planners._task_law import TASKS, predict_task, predict_tasks

LADDER = Path(__file__).resolve().parents[1] / "data" / "published" / "olmo_ladder"
PAPER_FOUR = ("mmlu_avg_test_5shot", "hellaswag_val_5shot", "piqa_val_5shot",
              "socialiqa_val_5shot")


def coverage(ladders: int, bootstrap: int) -> tuple[float, float]:
    spec = TASKS["hellaswag_val_5shot"]
    columns = (spec.columns("bpb")[0][0], spec.columns("bpb")[1][0])
    rng = np.random.default_rng(2024)
    hits, hits_x = [], []
    for replicate in range(ladders):
        runs = synthetic_ladder(rng, columns=columns)
        target = synthetic_run(7e9, 4e12, rng, name="target", columns=columns)
        p = predict_task(runs, spec.name, 7e9, 4e12, bootstrap=bootstrap, seed=replicate)
        actual, actual_x = target.table[columns[1]].iloc[-1], target.table[columns[0]].iloc[-1]
        hits.append(p.accuracy_interval[0] <= actual <= p.accuracy_interval[1])
        hits_x.append(p.intermediate_interval[0] <= actual_x <= p.intermediate_interval[1])
    return float(np.mean(hits)), float(np.mean(hits_x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ladders", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--x", default="bpb")
    args = parser.parse_args()

    start = time.perf_counter()
    accuracy, intermediate = coverage(args.ladders, args.bootstrap)
    ok = 0.90 <= accuracy <= 0.98
    print(f"synthetic ladders: {args.ladders}, 95% intervals cover the new run's accuracy on "
          f"{accuracy:.1%} (intermediate: {intermediate:.1%}) "
          f"[{time.perf_counter() - start:.0f} s] target 90-98%: {'PASS' if ok else 'FAIL'}")

    runs = read_ladder(sorted(LADDER.glob("*xC.csv")), LADDER / "final.json")
    (target,) = read_ladder([LADDER / "peteish7_eval_anneal.csv"], LADDER / "final.json")
    result = predict_tasks(runs, target.params, 3.95e12, x=args.x, bootstrap=args.bootstrap,
                           actual=target)
    print(f"\n7B-4T from the 16 ladder runs (x = {args.x}, bootstrap {args.bootstrap}):")
    print(f"{'task':26s} {'actual':>7s} {'pred':>7s} {'95% interval':>17s} {'error':>7s} "
          f"{'rel':>6s} inside")
    inside = 0
    for p in result.predictions:
        hit = p.accuracy_interval[0] <= p.actual <= p.accuracy_interval[1]
        inside += hit
        print(f"{p.task:26s} {p.actual:7.4f} {p.accuracy:7.4f} "
              f"[{p.accuracy_interval[0]:.4f}, {p.accuracy_interval[1]:.4f}] "
              f"{100 * p.error:+6.2f} {100 * abs(p.error) / p.actual:5.1f}% {hit}")
    four = all(abs(p.error) <= 0.02 for p in result.predictions if p.task in PAPER_FOUR)
    print(f"paper's four within 2 points: {'PASS' if four else 'FAIL'}; "
          f"inside 95% interval on {inside} of {len(result.predictions)}: "
          f"{'PASS' if inside >= 7 else 'FAIL'}")


if __name__ == "__main__":
    main()
