"""The multi-power law (Luo et al. 2025): the lattice (Laplace) loss drop against the literal
O(T²) double sum, the fit time, and the paper's protocol on its published curves.

1. Agreement: the loss-drop sum Q(t) of ``scalekit.laws._multipower`` against the double sum
   written out (``loss_drop_direct``), at every 8th step of three 24,000-step schedules
   (cosine, WSD exp, WSD linear to 0) under the repository's 25M shape and three random
   (C, beta, gamma). Target: |difference| <= 1e-10 |Q| + 1e-15 sum_k |drop_k| (relative
   1e-10, or a few units of the rounding of the drops it adds, where Q is ~1e-14 in the
   first warm-up steps). Both are timed at the same steps, and the lattice form also over
   all 24,000 steps (its cost is O((T + M) Q), the double sum's O(M T)).
2. Fit time: ``fit_multipower`` on three 24,000-step runs of the 25M model (cosine,
   constant, WSD), read with their ``lr`` columns, with the shape free and with the
   default prior on the shape (a second, penalised polish from the free optimum).
   Target: < 10 s on two cores, judged on the process's CPU time (the fit runs on one
   core, so that is its wall time on an idle machine; the wall time on the shared
   machine is printed with the load average). The ratio to one exact value-and-Jacobian
   evaluation on the same points (timed here) is printed too, as a figure that depends
   less on the load.
3. ``--protocol``: fit on cosine_24000, constant_24000, wsdcon_9 and score the other six
   by the mean and worst relative error, for 25M and 100M, with the default prior on the
   shape and (for comparison, same run) without; the repository's figures are the
   targets (25M 0.00110 / 0.00409, 100M 0.00142 / 0.00583).

    python bench/bench_multipower.py [--protocol]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.curves.readers import read_curves
from scalekit.laws._multipower import PARAMS, ScheduleTerms, loss_drop_direct, loss_drop_sums, multipower_law
from scalekit.schedules import parse_schedule
from scalekit.surrogates._schedule_forecast import (SHAPE_PRIOR, fit_multipower,
                                                     multipower_forecast, run_schedules)

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "multipower"
W = "warmup=2160,peak=3e-4"
SCHEDULES = (f"cosine:{W},final=3e-5,total=24000",
             f"wsd:{W},final=3e-5,decay=20000,total=24000",
             f"wsd:{W},final=0,decay=20000,total=24000,shape=linear")
SHAPE = (2.07, 0.58, 0.64)   # C, beta, gamma of the 25M fit of the repository
TRAIN = ("cosine_24000", "constant_24000", "wsdcon_9")
TARGETS = {"25": (0.00110, 0.00409), "100": (0.00142, 0.00583)}


def agreement() -> bool:
    rng = np.random.default_rng(0)
    shapes = [SHAPE, *np.exp(rng.uniform(np.log([0.05, 0.03, 0.1]), np.log([20, 5, 1.5]),
                                         (3, 3)))]
    worst_rel, worst_rule, fast, slow, whole = 0.0, 0.0, 0.0, 0.0, 0.0
    for spec in SCHEDULES:
        rates = parse_schedule(spec).rates
        steps = np.arange(1, rates.size, 8)
        scale = np.cumsum(np.abs(np.diff(rates)))[steps - 1]        # sum_k |drop_k|, k <= t
        for shape in shapes:
            started = time.perf_counter()
            got = loss_drop_sums(ScheduleTerms(rates, steps), *shape)
            fast += time.perf_counter() - started
            started = time.perf_counter()
            want = loss_drop_direct(rates, steps, *shape)
            slow += time.perf_counter() - started
            error = np.abs(got - want)
            after = steps >= 2160
            worst_rel = max(worst_rel, float((error / np.abs(want))[after].max()))
            worst_rule = max(worst_rule, float((error / (1e-10 * np.abs(want)
                                                         + 1e-15 * scale)).max()))
        started = time.perf_counter()
        loss_drop_sums(ScheduleTerms(rates, np.arange(1, rates.size)), *SHAPE)
        whole += time.perf_counter() - started
    ok = worst_rule <= 1.0
    n = len(SCHEDULES) * len(shapes)
    print(f"agreement over every 8th step of 3 x 24,000 steps, {len(shapes)} shapes: max relative "
          f"error after the warm-up {worst_rel:.1e}; max error / (1e-10 |Q| + 1e-15 sum|drop|) "
          f"= {worst_rule:.2g} (target <= 1): {'PASS' if ok else 'FAIL'}")
    print(f"  time per curve of 3,000 steps: lattice {fast / n * 1e3:.0f} ms, double sum "
          f"{slow / n * 1e3:.0f} ms (ratio {slow / fast:.0f}); lattice over all 24,000 steps "
          f"{whole / len(SCHEDULES) * 1e3:.0f} ms")
    return ok


def fit_time() -> bool:
    runs = ("cosine_24000", "constant_24000", "wsd_20000_24000")
    frame = pd.concat([read_curves(DATA / "25" / f"{run}.csv").frame for run in runs],
                      ignore_index=True)
    schedules = run_schedules(frame)
    law = multipower_law([schedules[run] for run in runs])
    steps = [frame.loc[frame["run"] == run, "step"].to_numpy() for run in runs]
    X = {"curve": np.concatenate([np.full(s.size, i) for i, s in enumerate(steps)]),
         "step": np.concatenate(steps)}
    ok, load = True, ", ".join(f"{v:.1f}" for v in os.getloadavg())
    for label, prior in (("free shape", None), ("default (shape prior)", SHAPE_PRIOR)):
        started, cpu = time.perf_counter(), time.process_time()
        fit = fit_multipower(frame, fit_on=runs, schedules=schedules, shape_prior=prior)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        z = law.to_fitting(np.array([fit.values[p] for p in PARAMS]))
        law.log_value_and_jacobian(X, z)     # the cached arrays, as in a fit
        started = time.perf_counter()
        for _ in range(3):
            law.log_value_and_jacobian(X, z)
        one = (time.perf_counter() - started) / 3
        ok &= cpu < 10.0
        print(f"fit of three 24,000-step runs, {label}: {cpu:.1f} s of CPU (target < 10 s): "
              f"{'PASS' if cpu < 10.0 else 'FAIL'}; {seconds:.1f} s wall at load {load}; = "
              f"{seconds / one:.0f} exact value+Jacobian evaluations of {one * 1e3:.0f} ms; "
              f"objective {fit.stats['objective']:.6g}")
    return ok


def protocol() -> bool:
    ok = True
    for size, (mean_target, worst_target) in TARGETS.items():
        files = sorted((DATA / size).glob("*.csv"))
        frame = pd.concat([read_curves(path).frame for path in files], ignore_index=True)
        free = multipower_forecast(frame, fit_on=TRAIN, evaluate=True, shape_prior=None)
        started = time.perf_counter()
        result = multipower_forecast(frame, fit_on=TRAIN, evaluate=True)
        seconds = time.perf_counter() - started
        avg, before = result.averages(), free.averages()
        passed = avg["mean_rel_error"] <= mean_target and avg["worst_rel_error"] <= worst_target
        ok &= passed
        print(f"{size}M protocol ({seconds:.0f} s): mean {avg['mean_rel_error']:.5f} (target "
              f"{mean_target}; free shape {before['mean_rel_error']:.5f}), worst "
              f"{avg['worst_rel_error']:.5f} (target {worst_target}; free shape "
              f"{before['worst_rel_error']:.5f}): {'PASS' if passed else 'FAIL'}")
        for run, was in zip(result.runs, free.runs, strict=True):
            print(f"  {run['run']:<18} mean {run['mean_rel_error']:.5f}  worst "
                  f"{run['worst_rel_error']:.5f}  R2 {run['r2']:.4f}   (free shape "
                  f"{was['mean_rel_error']:.5f} / {was['worst_rel_error']:.5f})")
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
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
