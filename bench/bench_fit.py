"""Multi-start Chinchilla fit: scalekit's batched engine against per-start scipy L-BFGS-B.

Data: the 240 Chinchilla points of Besiroglu et al. (2024) (five highest losses of
``data/published/chinchilla_epoch_svg.csv`` dropped, D = C / (6 N)); objective:
summed Huber (delta = 1e-3) on log residuals in the log-sum-exp form; starts: the
4,500-point grid of Hoffmann et al. (2022).

Reference: ``scipy.optimize.minimize(method="L-BFGS-B")`` called once per start,
as Besiroglu et al. did (finite-difference gradient by default; ``--gradient
analytic`` gives it the exact gradient). It is timed on a random subset of the
starts and extrapolated linearly to the whole grid; the output says so.

    python bench/bench_fit.py [--subset 300] [--gradient numeric|analytic] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import huber

from scalekit.fit import fit_law
from scalekit.laws import get_law

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "chinchilla_epoch_svg.csv"
DELTA = 1e-3


def load_points():
    frame = pd.read_csv(DATA)
    frame = frame.drop(frame["loss"].nlargest(5).index)
    N = frame["Model Size"].to_numpy(dtype=float)
    D = frame["Training FLOP"].to_numpy(dtype=float) / (6.0 * N)
    return N, D, frame["loss"].to_numpy(dtype=float)


def reference_objective(N, D, y, gradient):
    """The objective for one start, written plainly (z = e, a, b, alpha, beta)."""
    log_N, log_D, log_y = np.log(N), np.log(D), np.log(y)

    def value(z):
        e, a, b, alpha, beta = z
        terms = np.stack([a - alpha * log_N, b - beta * log_D, np.full_like(log_N, e)])
        top = terms.max(axis=0)
        exps = np.exp(terms - top)
        r = top + np.log(exps.sum(axis=0)) - log_y
        if gradient == "numeric":
            return huber(DELTA, r).sum()
        w = exps / exps.sum(axis=0)
        psi = np.clip(r, -DELTA, DELTA)
        g = np.array([psi @ w[2], psi @ w[0], psi @ w[1], -psi @ (w[0] * log_N),
                      -psi @ (w[1] * log_D)])
        return huber(DELTA, r).sum(), g

    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", type=int, default=300,
                        help="starts of the grid the reference is timed on")
    parser.add_argument("--gradient", choices=("numeric", "analytic"), default="numeric")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    N, D, y = load_points()
    law = get_law("chinchilla")
    grid = law.start_grid()
    X = {"params": N, "tokens": D}
    fit_law(law, {k: v[:30] for k, v in X.items()}, y[:30], starts=grid[:10])   # warm up

    start = time.perf_counter()
    ours = fit_law(law, X, y)
    ours_s = time.perf_counter() - start

    rng = np.random.default_rng(args.seed)
    subset = rng.choice(len(grid), size=min(args.subset, len(grid)), replace=False)
    value = reference_objective(N, D, y, args.gradient)
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        results = [minimize(value, grid[k], jac=args.gradient == "analytic", method="L-BFGS-B")
                   for k in subset]
    reference_s = (time.perf_counter() - start) * len(grid) / len(subset)
    reference_objectives = np.array([r.fun for r in results])
    reference_best = float(np.nanmin(reference_objectives))
    rtol = ours.stats["at_best_rtol"]

    print(f"points: {ours.stats['n_points']}, grid: {len(grid)} starts (Hoffmann et al. 2022)")
    print(f"scalekit batched multi-start + polish: {ours_s:8.2f} s for all {len(grid)} starts; "
          f"best objective {ours.stats['objective']:.10e}; "
          f"{ours.stats['n_at_best']}/{len(grid)} starts within rtol {rtol:g} of it")
    print(f"reference scipy L-BFGS-B per start ({args.gradient} gradient): timed on "
          f"{len(subset)} random starts, extrapolated linearly to {len(grid)}: "
          f"{reference_s:8.2f} s; best objective {reference_best:.10e}; "
          f"{int((reference_objectives <= ours.stats['objective'] * (1 + rtol)).sum())}"
          f"/{len(subset)} starts within rtol {rtol:g} of scalekit's best")
    print(f"speed-up: {reference_s / ours_s:.1f}x (target >= 100x)")
    verdict = "<=" if ours.stats["objective"] <= reference_best else ">"
    print(f"best objective: scalekit {ours.stats['objective']:.10e} {verdict} reference "
          f"{reference_best:.10e} (published refit: 1.0183e-3)")
    print("fitted: " + ", ".join(f"{k} = {v:.6g}" for k, v in ours.values.items()))


if __name__ == "__main__":
    main()
