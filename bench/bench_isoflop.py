"""Approach-2 vertex bootstrap: vectorised, against a loop of ``numpy.polyfit`` calls.

Data: the full Porian et al. (2024) IsoFLOP file (15 configurations; one
parabola per configuration and budget; three empty placeholder rows dropped).
Both sides fit the same 1,000 resamples (points drawn with replacement within
each profile); the script prints both times, their ratio (target >= 20x) and
the largest difference between the vertices they find.

Run: python bench/bench_isoflop.py [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.isoflop.parabolas import Groups, fit_parabolas, resample_within_groups, vertices

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "porian2024_isoflops.csv"
CONFIG = ["source_file", "dataset", "hparams", "warmup", "decay", "param_count", "loss_split"]


def load():
    data = pd.read_csv(DATA).dropna(subset=["N", "loss"])  # three empty placeholder rows
    data["profile"] = data.groupby(CONFIG + ["flops"], sort=True).ngroup()
    data = data.sort_values(["profile", "N"])
    x = np.log(data["N"].to_numpy())
    return x, data["loss"].to_numpy(), Groups.from_sorted_codes(data["profile"].to_numpy())


def fast(x, y, groups, n_boot, seed):
    indices = resample_within_groups(groups, n_boot, np.random.default_rng(seed))
    return indices, vertices(fit_parabolas(x, y, groups, indices), x, groups)[0]


def reference(x, y, groups, indices):
    member = groups.member
    out = np.full((indices.shape[0], groups.sizes.size), np.nan)
    for b, row in enumerate(indices):
        for k in range(groups.sizes.size):
            idx = row[member == k]
            if np.unique(x[idx]).size < 3:  # a parabola through fewer sizes is undetermined
                continue
            c2, c1, _ = np.polyfit(x[idx], y[idx], 2)
            if c2 > 0:
                out[b, k] = -c1 / (2 * c2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    x, y, groups = load()
    print(f"data: {x.size} points, {groups.sizes.size} IsoFLOP profiles; {args.n_boot} resamples")

    fast(x, y, groups, 5, args.seed)  # warm-up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        indices, got = fast(x, y, groups, args.n_boot, args.seed)
        times.append(time.perf_counter() - start)
    t_fast = min(times)

    start = time.perf_counter()
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # polyfit's RankWarning on degenerate resamples
            want = reference(x, y, groups, indices)
    t_ref = time.perf_counter() - start

    both = np.isfinite(got) & np.isfinite(want)
    same_nan = np.array_equal(np.isfinite(got), np.isfinite(want))
    diff = np.abs(got[both] - want[both])
    relative = float(np.max(diff / np.maximum(np.abs(want[both]), 1.0)))
    inside = np.abs(want[both]) < 50  # vertices within e^50 parameters: every sane one
    diff_inside, diff = float(np.max(diff[inside])), float(np.max(diff))
    print(f"vectorised: {t_fast:.3f} s (best of 3, resampling included)")
    print(f"polyfit loop: {t_ref:.3f} s ({indices.shape[0] * groups.sizes.size} polyfit calls)")
    print(f"ratio: {t_ref / t_fast:.1f}x (target >= 20x)")
    print(f"vertices ({int(both.sum())}): max |difference| in log N = {diff_inside:.3g} for "
          f"|log N*| < 50 ({int(inside.sum())}), {diff:.3g} over all (relative {relative:.3g}); "
          f"same resamples without a minimum: {same_nan}")


if __name__ == "__main__":
    main()
