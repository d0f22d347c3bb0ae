"""The multi-power law (Luo et al. 2025): the prefix-sum loss drop against the literal O(T²)
double sum, the fit time, and the paper's protocol on its published curves.

1. Agreement: the loss-drop sum Q(t) of ``scalekit.laws.multipower`` (prefix sums over the
   steps where the rate changes) against the double sum as written, at every 8th step of
   three 24,000-step schedules (cosine, WSD exp, WSD linear). Target: max |difference|
   <= 1e-10 (times B ~ 400 that is 4e-8 of loss). Both are timed at the logged steps
   (the prefix form with its schedule-only arrays built, as a fit builds them once).
2. Fit time: ``fit_multipower`` on three 24,000-step runs of the 25M model (cosine,
   constant, WSD), read with their ``lr`` columns. Target: < 10 s on two cores. The
   ratio to one exact value-and-Jacobian evaluation on the same points (timed here) is
   printed too, as a figure that does not depend on the machine's load.
3. ``--protocol``: fit on cosine_24000, constant_24000, wsdcon_9 and score the other six
   by the mean and worst relative error, for 25M and 100M; the repository's figures are
   the targets (25M 0.00110 / 0.00409, 100M 0.00142 / 0.00583).

    python bench/bench_multipower.py [--protocol]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.curves.readers import read_curves
from scalekit.laws.multipower import (PARAMS, ScheduleTerms, loss_drop_direct, loss_drop_sums,
                                      multipower_law)
from scalekit.schedules import parse_schedule
from scalekit.surrogates.schedule_forecast import fit_multipower, multipower_forecast, run_schedules

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "multipower"
W = "warmup=2160,peak=3e-4"
SCHEDULES = (f"cosine:{W},final=3e-5,total=24000",
             f"wsd:{W},final=3e-5,decay=20000,total=24000",
             f"wsd:{W},final=3e-5,decay=20000,total=24000,shape=linear")
SHAPE = (2.07, 0.58, 0.64)   # C, beta, gamma of the 25M fit of the repository
TRAIN = ("cosine_24000", "constant_24000", "wsdcon_9")
TARGETS = {"25": (0.00110, 0.00409), "100": (0.00142, 0.00583)}


def agreement() -> bool:
    worst, fast, slow = 0.0, 0.0, 0.0
    logged = pd.read_csv(DATA / "25" / "cosine_24000.csv")["step"].to_numpy()
    for spec in SCHEDULES:
        rates = parse_schedule(spec).rates
        steps = np.arange(1, rates.size, 8)
        got = loss_drop_sums(ScheduleTerms(rates, steps), *SHAPE)
        want = loss_drop_direct(rates, steps, *SHAPE)
        worst = max(worst, float(np.abs(got - want).max()))
        terms = ScheduleTerms(rates, logged)     # built once per fit
        started = time.perf_counter()
        loss_drop_sums(terms, *SHAPE)
        fast += time.perf_counter() - started
        started = time.perf_counter()
        loss_drop_direct(rates, logged, *SHAPE)
        slow += time.perf_counter() - started
    ok = worst <= 1e-10
    print(f"agreement: max |Q_prefix - Q_direct| = {worst:.2e} over every 8th step of 3 x 24,000 "
          f"steps (target <= 1e-10): {'PASS' if ok else 'FAIL'}")
    print(f"  at the logged steps: prefix form (arrays built once per fit) {fast:.3f} s, direct "
          f"{slow:.3f} s (ratio {slow / fast:.1f}); both O(M T) there")
    return ok


def fit_time() -> bool:
    runs = ("cosine_24000", "constant_24000", "wsd_20000_24000")
    frame = pd.concat([read_curves(DATA / "25" / f"{run}.csv").frame for run in runs],
                      ignore_index=True)
    schedules = run_schedules(frame)
    started = time.perf_counter()
    fit = fit_multipower(frame, fit_on=runs, schedules=schedules)
    seconds = time.perf_counter() - started
    law = multipower_law([schedules[run] for run in runs])
    steps = [frame.loc[frame["run"] == run, "step"].to_numpy() for run in runs]
    X = {"curve": np.concatenate([np.full(s.size, i) for i, s in enumerate(steps)]),
         "step": np.concatenate(steps)}
    z = law.to_fitting(np.array([fit.values[p] for p in PARAMS]))
    law.log_value_and_jacobian(X, z)     # the cached arrays, as in a fit
    started = time.perf_counter()
    for _ in range(3):
        law.log_value_and_jacobian(X, z)
    one = (time.perf_counter() - started) / 3
    ok = seconds < 10.0
    print(f"fit of three 24,000-step runs: {seconds:.1f} s (target < 10 s): "
          f"{'PASS' if ok else 'FAIL'}; = {seconds / one:.0f} exact value+Jacobian evaluations "
          f"of {one * 1e3:.0f} ms; objective {fit.stats['objective']:.6g}")
    return ok


def protocol() -> bool:
    ok = True
    for size, (mean_target, worst_target) in TARGETS.items():
        files = sorted((DATA / size).glob("*.csv"))
        frame = pd.concat([read_curves(path).frame for path in files], ignore_index=True)
        started = time.perf_counter()
        result = multipower_forecast(frame, fit_on=TRAIN, evaluate=True)
        seconds = time.perf_counter() - started
        avg = result.averages()
        passed = avg["mean_rel_error"] <= mean_target and avg["worst_rel_error"] <= worst_target
        ok &= passed
        print(f"{size}M protocol ({seconds:.0f} s): mean {avg['mean_rel_error']:.5f} (target "
              f"{mean_target}), worst {avg['worst_rel_error']:.5f} (target {worst_target}): "
              f"{'PASS' if passed else 'FAIL'}")
        for run in result.runs:
            print(f"  {run['run']:<18} mean {run['mean_rel_error']:.5f}  worst "
                  f"{run['worst_rel_error']:.5f}  R2 {run['r2']:.4f}")
        print("  params " + ", ".join(f"{k} {v:.4g}" for k, v in result.params.items()))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", action="store_true", help="also run the paper's protocol")
    args = parser.parse_args()
    ok = agreement()
    ok &= fit_time()
    if args.protocol:
        ok &= protocol()
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
