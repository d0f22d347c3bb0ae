"""Bootstrap of the Chinchilla fit: 1,000 resamples, each a multi-start fit.

Data as in ``bench_fit.py`` (240 points, Huber delta = 1e-3). Each resample
starts from the distinct optima of the full fit plus random starts of the
4,500-point grid (:mod:`scalekit.fit._bootstrap`). Target: under 60 s on 2 cores.

The check that these starts suffice: for ``--verify`` resamples (the first ones
of the same seeded draw) the whole 4,500-start grid is run as well, and the
bootstrap's optimum must be as good (objective within 1e-6 relative). The draw
is the one ``fit_law`` makes: its generator first draws the order of the starts
(one permutation of the grid), then the resamples; a reference on other
resamples would compare different fits.

    python bench/bench_bootstrap.py [--resamples 1000] [--jobs 2] [--verify 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench_fit import load_points
from scalekit.fit import fit_law
from scalekit.fit._bootstrap import bootstrap_fits, resample_counts
from scalekit.fit._objective import objective
from scalekit.laws import get_law

BESIROGLU_95 = {"E": (1.769, 1.871), "alpha": (0.317, 0.373), "beta": (0.331, 0.415)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--verify", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    N, D, y = load_points()
    X = {"params": N, "tokens": D}
    law = get_law("chinchilla")
    start = time.perf_counter()
    fit = fit_law(law, X, y, bootstrap=args.resamples, seed=args.seed, n_jobs=args.jobs)
    seconds = time.perf_counter() - start
    print(f"{args.resamples} bootstrap resamples of {len(y)} points, each a multi-start fit, "
          f"on {args.jobs} processes (including the full 4,500-start fit): {seconds:.1f} s "
          f"(target < 60 s on 2 cores: {'PASS' if seconds < 60 else 'FAIL'})")
    print(f"{fit.ci_level:.0%} percentile intervals, with Besiroglu et al. (2024) beside:")
    for name in law.param_names:
        lo, hi = fit.ci[name]
        published = BESIROGLU_95.get(name)
        extra = f"   published ({published[0]}, {published[1]})" if published else ""
        print(f"  {name:>5} = {fit.values[name]:.6g}  ({lo:.6g}, {hi:.6g}){extra}")

    if args.verify:
        grid = law.start_grid()
        rng = np.random.default_rng(args.seed)          # the same draws as inside fit_law:
        rng.permutation(len(grid))                      # the order of the starts, then
        counts = resample_counts(rng, len(y), args.resamples)[:args.verify]   # the resamples
        start = time.perf_counter()
        z_full, f_full = bootstrap_fits(law, X, np.log(y), counts,
                                        np.broadcast_to(grid, (len(counts),) + grid.shape),
                                        loss="huber", delta=1e-3, n_jobs=args.jobs)
        full_s = time.perf_counter() - start
        ours = law.to_fitting(fit.bootstrap_values[:args.verify])
        f_ours = np.array([objective(law, X, np.log(y), z, loss="huber", delta=1e-3,
                                     weights=c) for z, c in zip(ours, counts, strict=True)])
        same = f_ours <= f_full * (1 + 1e-6)
        print(f"verification on {args.verify} resamples against the whole grid "
              f"({full_s:.1f} s): bootstrap optimum as good on {int(same.sum())}/{args.verify}; "
              f"largest relative objective gap {float(np.max(f_ours / f_full - 1)):.2e} "
              f"(target: as good on all: {'PASS' if same.all() else 'FAIL'})")


if __name__ == "__main__":
    main()
