"""Pairwise compute multipliers of Marin's three IsoFLOP sweeps (comma, dclm, nemotron; one
architecture, three data sets; ``data/published/marin_isoflops.csv``), issue 40.

For each frontier law and pair (baseline, variant): k at 1e21 and 1e22 FLOPs with its 95%
paired-bootstrap interval and the verdict; the chain check k(comma→dclm)·k(dclm→nemotron)
against the interval of k(comma→nemotron); and a held-out check: the largest budget
(3e20) left out of both arms, k's interval at 3e20 from the rest against the multiplier the
held-out runs show (the variant's least loss at 3e20, from its parabola there, read off the
baseline's frontier fitted on all its budgets). The same held-out check on a second published
comparison of data sets, Porian et al. (2024): OpenWebText2 over RefinedWeb in four
configurations run on both (``data/published/porian2024_isoflops.csv``). Marin's rows flagged
``outlier`` in the source are left out; compute is the sweep's budget (counted FLOPs).

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
PORIAN = Path(__file__).parents[1] / "data" / "published" / "porian2024_isoflops.csv"
#: Porian et al. (2024)'s configurations run on both RefinedWeb (rw) and OpenWebText2 (owt2)
#: with the same settings (hparams, warmup, decay, param_count, loss_split).
PORIAN_CONFIGS = (("base", "long", "kaplan", "standard", "val"),
                  ("base", "short", "kaplan", "standard", "val"),
                  ("base", "short", "chinchilla", "standard", "val"),
                  ("tuned", "short", "const", "standard", "val"))
PAIRS = (("comma", "dclm"), ("dclm", "nemotron"), ("comma", "nemotron"))
TARGETS = (1e21, 1e22)
HELD_OUT = 3e20


def baseline_compute(arm: dict, loss: float) -> float:
    """The compute at which an arm's fitted frontier reaches ``loss``."""
    p = arm["parameters"]
    if "b" in p:                                  # the power law's (log_a, b)
        return float(np.exp((p["log_a"] - np.log(loss)) / p["b"]))
    return float(((loss - p["E"]) / p["A"]) ** (-1 / p["alpha"])) if loss > p["E"] else np.inf


def _g(value) -> str:
    """A multiplier, or "inf" where the baseline never reaches the variant's loss."""
    return "inf" if value is None else f"{value:.3f}"


def porian(law: str, bootstrap: int) -> bool:
    """Held-out check on a second published two-data-set comparison (Porian et al. 2024:
    OpenWebText2 over RefinedWeb, 12 budgets to 2.56e19): the largest budget left out."""
    data = pd.read_csv(PORIAN)
    ok = True
    for config in PORIAN_CONFIGS:
        keys = ("hparams", "warmup", "decay", "param_count", "loss_split")
        part = data[np.logical_and.reduce([data[k] == v for k, v in zip(keys, config,
                                                                           strict=True)])]
        part = part[["dataset", "flops", "N", "D", "loss"]].rename(
            columns={"flops": "compute", "N": "params", "D": "tokens"})
        top = part["compute"].max()
        full = compare(part, by="dataset", arms=["rw", "owt2"], target_compute=top, law=law,
                       convention="counted", bootstrap=bootstrap)
        held = compare(part[part["compute"] < top * 0.99], by="dataset", arms=["rw", "owt2"],
                       target_compute=top, law=law, convention="counted",
                       bootstrap=bootstrap).targets[0]
        minimum = [o for o in full.optima if o["arm"] == "owt2" and
                   abs(o["compute"] / top - 1) < 0.05]
        if not minimum:
            print(f"porian {'/'.join(config)}: the largest budget's least loss is at an edge")
            continue
        shown = baseline_compute(full.arms[0], minimum[0]["loss"]) / minimum[0]["compute"]
        lo, hi = (np.inf if v is None else v for v in held["multiplier_interval"])
        inside = lo <= shown <= hi
        ok &= inside
        print(f"porian {'/'.join(config):32s} owt2 over rw, {top:.2e} held out: predicted k "
              f"{_g(held['multiplier'])} [{lo:.3f}, {hi:.3f}], shown {shown:.3f}: "
              f"{'inside' if inside else 'OUTSIDE'}; full-data k "
              f"{_g(full.targets[0]['multiplier'])}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--law", choices=("auto", "power", "saturating", "all"), default="all")
    args = parser.parse_args()
    frame = pd.read_csv(DATA).rename(columns={"budget": "compute"})
    frame = frame[~frame["outlier"]].drop(columns=["outlier", "reason"])
    start = time.process_time()
    ok = True
    for law in ("auto", "power", "saturating") if args.law == "all" else (args.law,):
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
                shown = baseline_compute(result.arms[0], minimum[0]["loss"]) / \
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
        ok &= porian(law, args.bootstrap)
    print(f"CPU time {time.process_time() - start:.0f} s; {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
