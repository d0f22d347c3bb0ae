"""CPU time of ForecastPruner's ``should_prune`` at 100 trials, against Optuna's
SuccessiveHalvingPruner on the same study in the same run (issue 42 item 3).

The study: ``--trials`` trials of ``--steps`` steps each, every trial a model of a
random size drawn from the late-bloomer shape ``power-300`` of tests/late_bloomers.py
(its size scaled by a random factor in [0.5, 2], 0.3% log-normal noise), reported at
every step and asked ``should_prune`` after each report, in real Optuna (in-memory
storage unless ``--storage URL``). Each pruner's ``prune`` is timed in CPU time
(``time.process_time``) call by call; a small study is run first so that imports and
first compilations are not counted.

Printed per pruner: calls, mean and 99th percentile and worst CPU time per call,
CPU time per trial, and the ratio of per-trial time to SuccessiveHalvingPruner's.
The calls that fit a forecast (one per trial and rung, at most) are also summarised
apart. Target: the 99th percentile of ForecastPruner's per-call CPU time, and the mean
of its calls that fit a forecast, <= 100 ms (the worst call is printed beside them);
the bench exits 1 when it is not met. ``--families
all`` times the ensemble of all twelve families (the pruner before issue 42).

Run: ``python bench/bench_pruner.py [--trials 100] [--steps 300] [--families all]
[--storage sqlite:///study.db]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import optuna

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from late_bloomers import SHAPES, SIZES  # noqa: E402

from scalekit.integrations.optuna import ForecastPruner  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
TARGET_MS = 100.0


def curves(trials: int, steps: int, seed: int = 0) -> list[np.ndarray]:
    shape = SHAPES[0]
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1)
    out = []
    for _ in range(trials):
        i = int(rng.integers(len(SIZES)))
        out.append(shape.clean(i, t * rng.uniform(0.5, 2.0)) * np.exp(rng.normal(0, 0.003, steps)))
    return out


def timed_study(pruner, data: list[np.ndarray], storage: str | None) -> np.ndarray:
    """Per-call CPU seconds of ``pruner.prune`` over one study on ``data``; a
    ForecastPruner's calls that fit a forecast are marked in ``pruner.fitted``."""
    spent: list[float] = []
    prune = pruner.prune
    rankings = getattr(pruner, "_rankings", {})
    if rankings:  # mark the calls that fit a forecast
        pruner.fitted = []
        forecaster = rankings[False]._forecaster
        forecast = forecaster.forecast

        def marked(*args, **kwargs):
            pruner.fitted.append(len(spent))
            return forecast(*args, **kwargs)

        forecaster.forecast = marked

    def timed(study, trial):
        start = time.process_time()
        out = prune(study, trial)
        spent.append(time.process_time() - start)
        return out

    pruner.prune = timed
    study = optuna.create_study(pruner=pruner, storage=storage)

    def objective(trial):
        value = None
        for step, value in enumerate(data[trial.number], start=1):
            trial.report(float(value), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(value)

    study.optimize(objective, n_trials=len(data))
    return np.asarray(spent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--families", choices=("default", "all"), default="default")
    parser.add_argument("--storage", default=None)
    args = parser.parse_args()
    families = {} if args.families == "default" else {"families": None}
    forecast = lambda: ForecastPruner(min_resource=3, max_resource=args.steps,  # noqa: E731
                                      reduction_factor=3, **families)
    timed_study(forecast(), curves(6, args.steps, seed=1), None)   # imports, compilations
    data = curves(args.trials, args.steps)
    print(f"{args.trials} trials x {args.steps} steps; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; storage {args.storage or 'memory'}")
    per_trial = {}
    ok = True
    for name, pruner in (("SuccessiveHalvingPruner", optuna.pruners.SuccessiveHalvingPruner(
            min_resource=3, reduction_factor=3)),
                         (f"ForecastPruner ({args.families} families)", forecast())):
        storage = args.storage
        if storage and storage.startswith("sqlite:///") and os.path.exists(storage[10:]):
            os.remove(storage[10:])
        spent = timed_study(pruner, data, storage) * 1e3
        per_trial[name] = spent.sum() / args.trials
        p99 = float(np.percentile(spent, 99))
        line = (f"{name:<40} {len(spent):6d} calls  mean {spent.mean():7.2f} ms  "
                f"p99 {p99:7.2f} ms  worst {spent.max():7.2f} ms  "
                f"per trial {per_trial[name]:8.2f} ms")
        if name.startswith("Forecast"):
            fits = spent[np.asarray(pruner.fitted, int)]
            met = p99 <= TARGET_MS and fits.mean() <= TARGET_MS
            ok &= met
            ratio = per_trial[name] / per_trial["SuccessiveHalvingPruner"]
            line += (f"  ({ratio:.0f}x SuccessiveHalvingPruner per trial)\n{'':<40} "
                     f"{len(fits):6d} calls fit a forecast: mean {fits.mean():7.2f} ms  p99 "
                     f"{np.percentile(fits, 99):7.2f} ms  worst {fits.max():7.2f} ms;  target: "
                     f"p99 of all calls and mean of these <= {TARGET_MS:.0f} ms: "
                     f"{'met' if met else 'NOT met'}")
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
