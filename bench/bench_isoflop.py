"""Approach 2 on Porian et al. (2024): the default against the paper, and the batched
vertex fits against a loop of ``numpy.polyfit`` calls.

Data: the Porian et al. IsoFLOP file (15 configurations; three empty placeholder
rows dropped) and the paper's own fits (``porian2024_fit_results.json``).

1. The table: per configuration the paper's exponent a, scalekit's default a with its
   90% interval, whether the paper's a lies inside, the error, and how centred the
   interval is (the share of bootstrap exponents below the estimate, ideally 0.5, and
   the estimate's position between the interval's ends, 0 … 1); the same with
   parabolas through every size (``window="all"``) for comparison. Targets: inside on
   >= 14 of 15, median |Δa| <= 0.02.
2. Speed: the bootstrap's parabola fits (every replicate of the losses, every budget of
   every configuration, one batched call) against one ``numpy.polyfit`` per replicate
   and budget; target >= 20x, and the largest difference between the vertices found.

Run: python bench/bench_isoflop.py [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.isoflop import IsoFLOPProfiles
from scalekit.isoflop._parabolas import Groups, fit_parabolas, vertices

DATA = Path(__file__).resolve().parents[1] / "data" / "published"
CONFIG = ["source_file", "dataset", "hparams", "warmup", "decay", "param_count", "loss_split"]


def configurations():
    points = pd.read_csv(DATA / "porian2024_isoflops.csv").dropna(subset=["N", "loss"])
    published = json.loads((DATA / "porian2024_fit_results.json").read_text())
    for config in published:
        mask = np.logical_and.reduce([points[c] == config[c] for c in CONFIG])
        yield config, points[mask].rename(columns={"flops": "compute", "N": "params",
                                                   "D": "tokens"})


def table(n_boot: int, seed: int) -> None:
    rows = []
    for config, data in configurations():
        row = {"configuration": "/".join(str(config[c]) for c in CONFIG[1:]),
               "paper a": config["basic"]["n_exponent"]}
        for label, window in (("", "auto"), ("all sizes ", "all")):
            law = IsoFLOPProfiles(window=window, n_boot=n_boot, ci_level=0.9,
                                  seed=seed).fit(data).params_law_
            lo, hi = law.exponent_ci
            row[f"{label}a"] = law.exponent
            row[f"{label}90%"] = f"[{lo:.3f}, {hi:.3f}]"
            row[f"{label}inside"] = bool(lo <= row["paper a"] <= hi)
            row[f"{label}Δa"] = law.exponent - row["paper a"]
            if not label:
                row["share below"] = float(np.mean(law.replicates[:, 1] < law.exponent))
                row["position"] = (law.exponent - lo) / (hi - lo)
        rows.append(row)
    frame = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.precision", 3):
        print(frame.to_string(index=False))
    for label in ("", "all sizes "):
        print(f"{label or 'default '}: paper's a inside the 90% interval on "
              f"{int(frame[f'{label}inside'].sum())} of {len(frame)} (target >= 14); "
              f"median |Δa| = {frame[f'{label}Δa'].abs().median():.4f} (target <= 0.02), "
              f"largest {frame[f'{label}Δa'].abs().max():.3f}")
    print(f"centring: share of bootstrap a below the estimate {frame['share below'].min():.2f} "
          f"… {frame['share below'].max():.2f}; estimate's position in the interval "
          f"{frame['position'].min():.2f} … {frame['position'].max():.2f}")


def profiles():
    """Every budget of every configuration as one group: log N, loss, groups."""
    frames = []
    for k, (_, data) in enumerate(configurations()):
        data = data.assign(profile=data.groupby("compute", sort=True).ngroup() + 1000 * k)
        frames.append(data)
    data = pd.concat(frames).sort_values(["profile", "params"])
    return (np.log(data["params"].to_numpy()), data["loss"].to_numpy(),
            Groups.from_sorted_codes(data["profile"].to_numpy()))


def reference(x, replicas, groups):
    member = groups.member
    out = np.full((replicas.shape[0], groups.sizes.size), np.nan)
    for b, y in enumerate(replicas):
        for k in range(groups.sizes.size):
            if np.unique(x[member == k]).size < 3:  # a parabola through fewer sizes is undetermined
                continue
            c2, c1, _ = np.polyfit(x[member == k], y[member == k], 2)
            if c2 > 0:
                out[b, k] = -c1 / (2 * c2)
    return out


def speed(n_boot: int, seed: int) -> None:
    x, y, groups = profiles()
    replicas = y + np.random.default_rng(seed).normal(0.0, 0.02, (n_boot, y.size))
    print(f"\nspeed: {x.size} points, {groups.sizes.size} profiles, {n_boot} replicates")
    vertices(fit_parabolas(x, replicas[:5], groups), x, groups)  # warm-up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        got = vertices(fit_parabolas(x, replicas, groups), x, groups)[0]
        times.append(time.perf_counter() - start)
    t_fast = min(times)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # polyfit's RankWarning on degenerate profiles
        want = reference(x, replicas, groups)
    t_ref = time.perf_counter() - start
    both = np.isfinite(got) & np.isfinite(want)
    lo, hi = np.minimum.reduceat(x, groups.starts), np.maximum.reduceat(x, groups.starts)
    near = both & (want > 2 * lo - hi) & (want < 2 * hi - lo)  # the vertices the estimator keeps
    print(f"batched: {t_fast:.3f} s (best of 3); polyfit loop: {t_ref:.3f} s "
          f"({replicas.shape[0] * groups.sizes.size} polyfit calls)")
    print(f"ratio: {t_ref / t_fast:.1f}x (target >= 20x); max |difference| in log N = "
          f"{np.abs(got - want)[near].max():.3g} over the {int(near.sum())} vertices within one "
          f"span of their sampled range, {np.abs(got - want)[both].max():.3g} over all "
          f"{int(both.sum())}; same replicates without a minimum: "
          f"{np.array_equal(np.isfinite(got), np.isfinite(want))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    table(args.n_boot, args.seed)
    speed(args.n_boot, args.seed)


if __name__ == "__main__":
    main()
