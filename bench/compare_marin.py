"""Pairwise compute multipliers of Marin's three IsoFLOP sweeps (comma, dclm, nemotron; one
architecture, three data sets; ``data/published/marin_isoflops.csv``), issue 40.

For each frontier law and pair (baseline, variant): k at 1e21 and 1e22 FLOPs with its 95%
paired-bootstrap interval and the verdict; the chain check k(comma→dclm)·k(dclm→nemotron)
against the interval of k(comma→nemotron); and a held-out check: the largest budget
(3e20) left out of both arms, k's interval at 3e20 from the rest against the multiplier the
held-out runs show (the variant's least loss at 3e20, from its parabola there, read off the
baseline's frontier fitted on all its budgets). Rows flagged ``outlier`` in the source are
left out; compute is the sweep's budget (counted FLOPs).

    python bench/compare_marin.py [--bootstrap 1000] [--law power]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.isoflop import compare

DATA = Path(__file__).parents[1] / "data" / "published" / "marin_isoflops.csv"
PAIRS = (("comma", "dclm"), ("dclm", "nemotron"), ("comma", "nemotron"))
TARGETS = (1e21, 1e22)
HELD_OUT = 3e20


def baseline_compute(arm: dict, law: str, loss: float) -> float:
    """The compute at which an arm's fitted frontier reaches ``loss``."""
    p = arm["parameters"]
    if law == "power":
        return float(np.exp((p["log_a"] - np.log(loss)) / p["b"]))
    return float(((loss - p["E"]) / p["A"]) ** (-1 / p["alpha"])) if loss > p["E"] else np.inf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--law", choices=("power", "saturating", "both"), default="both")
    args = parser.parse_args()
    frame = pd.read_csv(DATA).rename(columns={"budget": "compute"})
    frame = frame[~frame["outlier"]].drop(columns=["outlier", "reason"])
    start = time.process_time()
    ok = True
    for law in ("power", "saturating") if args.law == "both" else (args.law,):
        print(f"== {law} frontier, {args.bootstrap} paired replicates")
        k = {}
        for a, b in PAIRS:
            result = compare(frame, by="dataset", arms=[a, b], target_compute=TARGETS, law=law,
                             convention="counted", bootstrap=args.bootstrap)
            for t in result.targets:
                k[a, b, t["compute"]] = t
                lo, hi = t["multiplier_interval"]
                print(f"{b:>9s} over {a:<6s} at {t['compute']:.0e}: k = {t['multiplier']:.3f} "
                      f"[{lo:.3f}, {hi:.3f}]  loss diff {t['loss_difference']:+.4f}  "
                      f"{t['verdict']}")
            e = result.exponents
            print(f"{'':>9s} exponent difference {e['difference']:+.5f} "
                  f"[{e['difference_interval'][0]:+.5f}, {e['difference_interval'][1]:+.5f}]"
                  + (f", frontiers cross at {e['crossing']:.3g} FLOPs" if e["crossing"] else ""))
            held = frame[frame["compute"] < HELD_OUT * 0.99]
            part = compare(held, by="dataset", arms=[a, b], target_compute=HELD_OUT, law=law,
                           convention="counted", bootstrap=args.bootstrap).targets[0]
            minimum = [o for o in result.optima if o["arm"] == b and
                       abs(o["compute"] / HELD_OUT - 1) < 0.05]
            if minimum:
                shown = baseline_compute(result.arms[0], law, minimum[0]["loss"]) / \
                    minimum[0]["compute"]
                lo, hi = part["multiplier_interval"]
                inside = lo <= shown <= hi
                ok &= inside
                print(f"{'':>9s} held out {HELD_OUT:.0e}: predicted k {part['multiplier']:.3f} "
                      f"[{lo:.3f}, {hi:.3f}], shown by the held-out runs {shown:.3f}: "
                      f"{'inside' if inside else 'OUTSIDE'}")
        for c in TARGETS:
            chained = k["comma", "dclm", c]["multiplier"] * k["dclm", "nemotron", c]["multiplier"]
            lo, hi = k["comma", "nemotron", c]["multiplier_interval"]
            inside = lo <= chained <= hi
            ok &= inside
            print(f"chain at {c:.0e}: k(comma→dclm)·k(dclm→nemotron) = {chained:.3f}; "
                  f"k(comma→nemotron) = {k['comma', 'nemotron', c]['multiplier']:.3f} "
                  f"[{lo:.3f}, {hi:.3f}]: {'consistent' if inside else 'INCONSISTENT'}")
    print(f"CPU time {time.process_time() - start:.0f} s; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
