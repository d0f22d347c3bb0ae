"""Paired comparison of two metrics' D* exponents on synthetic IsoFLOP sweeps (issue 30).

Each sweep: 5 budgets × 9 sizes, two metrics whose optima follow D* ∝ C^b with known b
(:func:`scalekit.isoflop._synthetic_metrics.isoflop_sweep`). For ``--sweeps`` sweeps the
95% paired-bootstrap interval of b2 - b1 (``--bootstrap`` replicates) is computed.
Targets: it covers the true difference on >= 90% of sweeps for b = (0.45, 0.60), and for
the null case b1 = b2 = 0.5 the pair is flagged "not distinguishable" on >= 90%. The
power (0.45 vs 0.60 flagged distinguishable) is printed beside them.

    python bench/bench_per_metric.py [--sweeps 50] [--bootstrap 200]
"""

from __future__ import annotations

import argparse
import time

from scalekit.isoflop._per_metric import compare_metrics
from scalekit.isoflop._synthetic_metrics import isoflop_sweep

TARGET = 0.90


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    settings = {"profile": "params", "figures": None, "budgets": None, "budget_tolerance": 0.1,
                "window": "all", "target_compute": None, "bootstrap": args.bootstrap,
                "ci_level": 0.95, "convention": "6ND", "flops_per_param_token": 6.0}
    ok = True
    start = time.perf_counter()
    for name, exponents in (("b = 0.45 vs 0.60", (0.45, 0.60)), ("null b1 = b2 = 0.5", (0.5, 0.5))):
        truth = exponents[1] - exponents[0]
        covered = flagged = 0
        for seed in range(args.sweeps):
            pair = compare_metrics(isoflop_sweep(exponents, seed=seed), ["m1", "m2"],
                                   settings=settings, seed=seed).pairs[0]
            covered += pair["diff_b_lo"] <= truth <= pair["diff_b_hi"]
            flagged += not pair["distinguishable"]
        coverage, share = covered / args.sweeps, flagged / args.sweeps
        if truth:
            passed = coverage >= TARGET
            print(f"{name}: coverage of b2 - b1 = {truth:g}: {coverage:.0%}; power (flagged "
                  f"distinguishable): {1 - share:.0%}  target coverage >= {TARGET:.0%}  "
                  f"{'PASS' if passed else 'FAIL'}")
        else:
            passed = share >= TARGET
            print(f"{name}: flagged not distinguishable on {share:.0%} "
                  f"(= coverage of 0)  target >= {TARGET:.0%}  {'PASS' if passed else 'FAIL'}")
        ok &= passed
    print(f"{2 * args.sweeps} sweeps in {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
