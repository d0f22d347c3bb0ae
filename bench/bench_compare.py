"""Compute multipliers on synthetic pairs with a known k (issue 40).

Each draw: two IsoFLOP sweeps (6 budgets 1e18–3e20 × 9 sizes, the same models in both arms,
independent loss noise 0.01) from Chinchilla's law, the variant seeing ``scale`` times the
parameters and tokens (:func:`scalekit.isoflop.isoflop_pair`). Cases:

* ``constant``: scale 1.2, so k = 1.44 at every compute;
* ``scale-dependent``: scale 1.2 and the variant's data exponent 0.30 (the baseline's 0.28),
  so k grows with compute (:meth:`~scalekit.isoflop.SyntheticPair.multiplier`);
* ``null``: scale 1, k = 1.

For each law, its own generator: ``power`` (L* = a·C^-b) on pairs with no floor (E = 0: the
frontier is exactly a power law), ``saturating`` (E + A·C^-alpha) and ``chinchilla`` (L(N, D)
fitted to every run) on pairs with E = 1.69; ``auto`` (the default: power unless its fit
fails and saturating's does not) on pairs with E = 1.69, where the power law is wrong.
Per case the share of draws whose 95% interval of k covers the truth at each target
(3e20: the largest budget; 1e21, 1e22: extrapolated) and, for the null case, the share that
claims "better". Targets: coverage 0.90–0.98, false "better" ≤ 0.05. Exit 1 when missed.

    python bench/bench_compare.py [--draws 200] [--bootstrap 200] [--law power|saturating|chinchilla|all]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scalekit.isoflop import compare, isoflop_pair

TARGETS = (3e20, 1e21, 1e22)
COVERAGE = (0.90, 0.98)
FALSE_BETTER = 0.05
CASES = {"constant": {"scale": 1.2}, "scale-dependent": {"scale": 1.2, "variant_beta": 0.30},
         "null": {"scale": 1.0}}
FLOOR = {"power": 0.0, "saturating": None, "chinchilla": None, "auto": None}


def run(law: str, draws: int, bootstrap: int) -> bool:
    ok = True
    for case, settings in CASES.items():
        covered = np.zeros(len(TARGETS))
        better = np.zeros(len(TARGETS))
        widths = []
        for seed in range(draws):
            pair = isoflop_pair(seed=seed, floor=FLOOR[law], **settings)
            result = compare(pair.baseline, pair.variant, target_compute=TARGETS, law=law,
                             bootstrap=bootstrap, seed=seed)
            truth = pair.multiplier(np.array(TARGETS))
            for i, t in enumerate(result.targets):
                lo, hi = (np.inf if v is None else v for v in t["multiplier_interval"])
                covered[i] += lo <= truth[i] <= hi
                better[i] += t["verdict"] == "better"
            widths.append([np.log(t["multiplier_interval"][1] / t["multiplier_interval"][0])
                           if None not in t["multiplier_interval"] else np.inf
                           for t in result.targets])
        share = covered / draws
        for i, c in enumerate(TARGETS):
            hit = COVERAGE[0] <= share[i] <= COVERAGE[1]
            line = (f"{law:10s} {case:16s} C={c:.0e}: k covered {share[i]:.3f} "
                    f"(target {COVERAGE[0]:.2f}-{COVERAGE[1]:.2f}) {'ok' if hit else 'MISSED'}; "
                    f"median log-width {np.median(np.array(widths)[:, i]):.3f}")
            ok &= hit
            if case == "null":
                fb = better[i] / draws
                line += f"; 'better' claimed {fb:.3f} (target <= {FALSE_BETTER}) " \
                        + ("ok" if fb <= FALSE_BETTER else "MISSED")
                ok &= fb <= FALSE_BETTER
            else:
                line += f"; 'better' (power) {better[i] / draws:.3f}"
            print(line, flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--law", choices=(*FLOOR, "all"), default="all")
    args = parser.parse_args()
    start = time.process_time()
    laws = tuple(FLOOR) if args.law == "all" else (args.law,)
    ok = all([run(law, args.draws, args.bootstrap) for law in laws])
    print(f"CPU time {time.process_time() - start:.0f} s; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
