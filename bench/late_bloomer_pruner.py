"""ForecastPruner on late-bloomer studies of several shapes: constants chosen on some
shapes, scored on the others (issue 37 item 6).

The shapes are those of tests/late_bloomers.py (nine sizes 0-8, the bigger the slower
to start, size 8 lowest at the end; power, plateau-then-drop and stretched-exponential
decays, 120 to 1,000 steps, 0.3% and 1% noise). Each study runs the nine sizes in a
shuffled order (size 8 after two others) under the pruner, ``min_resource=3``,
``reduction_factor=3``, ``max_resource`` the shape's steps, in real Optuna, for
``--seeds`` seeds (order and noise).

The constants: the quantile ranked on (``--quantiles``) and how far a forecast may
reach beyond a trial's points before it is judged (``--reaches``, see
:class:`scalekit.integrations._rungs.ForecastRanking`), with the ensemble's families
``--families`` (``fast``: the six cheapest, :data:`scalekit.integrations._rungs.FAMILIES`;
``all``: all twelve). The shapes are split in two folds (even and odd positions); on each fold
the candidate that passes on most of its studies (ties: fewest steps) is chosen,
and scored on the other fold. A study *passes* when size 8 completes as the best trial
and the steps trained are <= 70% of the steps of no pruning (the target).
Optuna's SuccessiveHalvingPruner (same settings) is run on every study for reference.

Run: ``python bench/late_bloomer_pruner.py [--seeds 3] [--quantiles 0.1 0.2]
[--reaches 1 0.7 0.5 0.3] [--families fast]``. The studies can run in several processes:
``--shapes NAME ... --save FILE`` runs those shapes only and writes their results
(JSON lines); ``--load FILE ...`` then reads them back and scores (no study is run).
Exits 1 unless every scored study passes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

import optuna

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from late_bloomers import SHAPES, order_of, study  # noqa: E402

from scalekit.integrations.optuna import ForecastPruner  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
LIMIT = 0.7


def run(shape, seed: int, make) -> tuple[bool, float, int]:
    """(size 8 completed as the best, share of the steps of no pruning, best size)."""
    states, used, best = study(optuna, make(shape), shape, order_of(seed), seed)
    return best == 8, used / (9 * shape.steps), best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quantiles", type=float, nargs="+", default=[0.1, 0.2])
    parser.add_argument("--reaches", type=float, nargs="+", default=[1.0, 0.7, 0.5, 0.3])
    parser.add_argument("--families", choices=("fast", "all"), default="fast")
    parser.add_argument("--shapes", nargs="+", default=None)
    parser.add_argument("--save", default=None)
    parser.add_argument("--load", nargs="+", default=None)
    args = parser.parse_args()
    seeds = range(args.seeds)
    candidates = list(itertools.product(args.quantiles, args.reaches))
    extra = {} if args.families == "fast" else {"families": None}

    def pruner(quantile, reach):
        return lambda shape: ForecastPruner(min_resource=3, max_resource=shape.steps,
                                            reduction_factor=3, quantile=quantile, reach=reach,
                                            **extra)

    results = {}   # (candidate, shape name) -> list of (kept, share, best)
    if args.load:
        for path in args.load:
            with open(path) as lines:
                for line in map(json.loads, lines):
                    key = "sh" if line["candidate"] == "sh" else tuple(line["candidate"])
                    results[(key, line["shape"])] = [tuple(r) for r in line["rows"]]
        candidates = sorted({key for key, _ in results if key != "sh"})
    for shape in SHAPES if not args.load else ():
        if args.shapes and shape.name not in args.shapes:
            continue
        shape.check(3)
        sh = [run(shape, s, lambda sh_: optuna.pruners.SuccessiveHalvingPruner(
            min_resource=3, reduction_factor=3)) for s in seeds]
        results[("sh", shape.name)] = sh
        for candidate in candidates:
            results[(candidate, shape.name)] = [run(shape, s, pruner(*candidate)) for s in seeds]
        if args.save:
            with open(args.save, "a") as out:
                for (key, name), rows in results.items():
                    if name == shape.name:
                        out.write(json.dumps({"candidate": key, "shape": name, "rows": rows})
                                  + "\n")
    for shape in SHAPES:
        if ("sh", shape.name) not in results:
            continue
        print(f"{shape.name:<14} SH best {[r[2] for r in results[('sh', shape.name)]]}  " + "  ".join(
            f"q{c[0]:g}/r{c[1]:g}: best {[r[2] for r in results[(c, shape.name)]]} steps "
            f"{max(r[1] for r in results[(c, shape.name)]):.2f}" for c in candidates), flush=True)
    if args.shapes:
        return 0

    def passes(rows):
        return sum(kept and share <= LIMIT for kept, share, _ in rows)

    present = [shape for shape in SHAPES if ("sh", shape.name) in results]
    folds = [present[0::2], present[1::2]]
    ok = True
    print("\nfold  chosen on               candidate   scored on: shape  best sizes  "
          "worst steps share  pass")
    for k, (train, test) in enumerate([(folds[0], folds[1]), (folds[1], folds[0])]):
        def merit(c, train=train):
            rows = [r for shape in train for r in results[(c, shape.name)]]
            return (passes(rows), -sum(r[1] for r in rows))
        chosen = max(candidates, key=merit)
        train_pass = merit(chosen)[0]
        train_rows = sum(len(results[(chosen, shape.name)]) for shape in train)
        for shape in test:
            rows = results[(chosen, shape.name)]
            n = passes(rows)
            ok &= n == len(rows)
            print(f"{k}  {train_pass}/{train_rows} on "
                  f"{','.join(s.name for s in train)[:20]:<20} q{chosen[0]:g}/r{chosen[1]:g}  "
                  f"{shape.name:<14} {[r[2] for r in rows]}  {max(r[1] for r in rows):.2f}  "
                  f"{n}/{len(rows)}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
