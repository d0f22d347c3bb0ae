"""The forecasting benchmark of Alabdulmohsin, Neyshabur & Zhai (2022), their protocol.

Data: ``data/published/revisiting_nsl_lang.csv`` and ``revisiting_nsl_vision.csv``
(see PROVENANCE.md). One evaluation per curve (Domain, Task, Model): one (model,
task) for image classification (IC, 72), one task for BIG-bench (BB, 10), one
model for NMT (5) and LM (5), as in the paper. Each method is fitted on the
evaluation's rows with ``Training == 1`` and forecasts every row with
``Training == 0`` (the LM rows repeated verbatim in the file are counted once).
No truth reaches any method; no setting below was chosen per domain from
held-out numbers.

Measures per domain (docs/forecast.md): ``rmse`` = mean over evaluations of the
RMSE of ln loss over all the evaluation's held-out points; ``x M4`` = that over
M4's; ``wins`` = share of evaluations where the method's RMSE beats M4's after
truncation to 3 decimals, ties counting half (the paper's rule); ``c50/c80/c95``
= share of all held-out points of the domain inside the central 50/80/95%
interval; ``evals``. M4 (``m4-paper``) is the law of scalekit.laws._m4 fitted
with the paper's settings (scalekit.surrogates._paper_m4); ``m4`` is the same
form as one family of the ensemble (its noise model, its starts).

The target lines check issue 25's targets for the default method
(``stacked-backtest``) and print PASS/FAIL (exit status 1 if any fails): mean
RMSE <= 0.78 x M4 with >= 60% wins on IC, <= 1.00 x M4 with >= 50% wins on BB;
50/80/95% coverage each within 5 points of nominal on IC, on BB and on LM and
NMT pooled (being small). Read the ratios knowing that ``m4-paper`` is a
stronger M4 than the authors' own fit (docs/forecast.md).

With ``--ceiling`` it also prints, per domain, hindsight references (truths
read, so no method could claim them): the best of the candidates and the
twelve single families picked on the held-out points, and the best fixed
log-space combination of all of them with weights fitted to those very
points (minimising their mean absolute log error) -- about the most any
stacking of them, however learned, could reach.

Run: ``python bench/revisiting_benchmark.py [--quick] [--ceiling]`` (several
minutes on 2 shared cores; ``--quick`` keeps every fourth image-classification
curve).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from scalekit.surrogates._curve_families import DEFAULT_FAMILIES
from scalekit.surrogates._evaluate import (LEVELS, QUANTILES, ensemble_method, holdout_benchmark,
                                           paper_m4_method, remembered, split_tasks, stacking_weights)
from scalekit.surrogates._forecast import default_method

DATA = Path(__file__).resolve().parents[1] / "data" / "published"
DEFAULT = "stacked-backtest"


def tasks(name: str, stride: int = 1):
    frame = pd.read_csv(DATA / f"revisiting_nsl_{name}.csv").drop_duplicates()
    frame["run"] = frame["Domain"] + "|" + frame["Task"] + "|" + frame["Model"]
    keep = sorted(frame["run"].unique())[::stride]
    return split_tasks(frame[frame["run"].isin(keep)], train="Training", x="Seen Examples",
                       y="Loss", group="Domain")


def pooled_cover(table: pd.DataFrame, tasks_, method: str, domains, level: float) -> float:
    """A method's coverage at ``level`` over all held-out points of ``domains``."""
    rows = table[(table["method"] == method) & table["group"].isin(domains)]
    points = {d: sum(t.x_target.size for t in tasks_ if t.group == d) for d in domains}
    column = f"cover{int(level * 100)}"
    return float(sum(getattr(r, column) * points[r.group] for r in rows.itertuples())
                 / sum(points.values()))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def targets(table: pd.DataFrame, tasks_) -> bool:
    """Print the issue's targets for the default with PASS/FAIL; True when all pass."""
    rows = table[table["method"] == DEFAULT].set_index("group")
    passed = True
    for domain, ratio, wins in (("IC", 0.78, 0.60), ("BB", 1.00, 0.50)):
        r = rows.loc[domain]
        ok = r.ratio_to_reference <= ratio and r.win_rate_vs_reference >= wins
        passed &= ok
        print(f"{domain}: {r.rmse_log:.4f} = {r.ratio_to_reference:.3f} x M4 (target <= "
              f"{ratio:.2f}), wins {r.win_rate_vs_reference:.0%} (target >= {wins:.0%}): "
              f"{verdict(ok)}")
    for label, domains in (("IC", ("IC",)), ("BB", ("BB",)), ("LM+NMT pooled", ("LM", "NMT"))):
        covers = [pooled_cover(table, tasks_, DEFAULT, domains, level) for level in LEVELS]
        ok = all(abs(c - level) <= 0.05 for c, level in zip(covers, LEVELS, strict=True))
        passed &= ok
        shown = " / ".join(f"{c:.3f}" for c in covers)
        print(f"{label}: 50/80/95% coverage {shown} (target each within 0.05 of nominal): "
              f"{verdict(ok)}")
    for domain in ("NMT", "LM"):
        r = rows.loc[domain]
        print(f"{domain} (no target): {r.rmse_log:.4f} = {r.ratio_to_reference:.3f} x M4, "
              f"wins {r.win_rate_vs_reference:.0%}")
    return passed


def ceiling(all_tasks, candidates) -> None:
    """Hindsight references per domain (see the module docstring)."""
    median = int(np.flatnonzero(np.isclose(QUANTILES, 0.5))[0])
    members = {**candidates, **{name: remembered(ensemble_method(families=(name,)))
                                for name in DEFAULT_FAMILIES}}
    logs = {name: [np.log(np.asarray(q)[: t.x_target.size, median])
                   for q, t in zip(method(all_tasks), all_tasks, strict=True)]
            for name, method in members.items()}
    names = list(members)
    for domain in sorted({t.group for t in all_tasks}):
        idx = [i for i, t in enumerate(all_tasks) if t.group == domain]
        errors = [np.column_stack([logs[n][i] for n in names])
                  - np.log(all_tasks[i].y_target)[:, None] for i in idx]
        rmse = np.array([np.sqrt((e ** 2).mean(axis=0)) for e in errors]).mean(axis=0)
        best = int(np.argmin(rmse))
        weights = stacking_weights(np.vstack(errors))
        stacked = np.mean([np.sqrt(((e @ weights) ** 2).mean()) for e in errors])
        m4 = rmse[names.index("m4-paper")]
        kept = {n: round(float(w), 2) for n, w in zip(names, weights, strict=True) if w > 0.01}
        print(f"{domain} hindsight: best single {names[best]} {rmse[best]:.4f} "
              f"({rmse[best] / m4:.2f} x M4); truth-fitted stacking {stacked:.4f} "
              f"({stacked / m4:.2f} x M4) with {kept}; the target is <= {0.8 * m4:.4f}")


def main() -> int:
    threadpool_limits(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every fourth IC curve")
    parser.add_argument("--ceiling", action="store_true",
                        help="also print hindsight references (truths read)")
    args = parser.parse_args()
    all_tasks = tasks("lang") + tasks("vision", 4 if args.quick else 1)
    candidates = {"m4-paper": remembered(paper_m4_method()),
                  "ensemble": remembered(ensemble_method()),
                  "average": remembered(ensemble_method(weighting="equal"))}
    methods = {**candidates, "m4": ensemble_method(families=("m4",)),
               DEFAULT: default_method(candidates)}
    start = time.perf_counter()
    table = holdout_benchmark(all_tasks, methods, reference="m4-paper").table
    pd.set_option("display.width", 200)
    shown = table.rename(columns={"ratio_to_reference": "x M4", "win_rate_vs_reference": "wins",
                                  "rmse_log": "rmse", "cover50": "c50", "cover80": "c80",
                                  "cover95": "c95", "n_evaluations": "evals"})
    print(shown.round(4).to_string(index=False))
    print()
    passed = targets(table, all_tasks)
    stacked = methods[DEFAULT]
    for domain, weights in stacked.weights_.items():
        kept = {k: round(v, 3) for k, v in weights.items() if v > 1e-3}
        widths = " / ".join(f"{w:.4f}" for w in stacked.widths_[domain].values())
        print(f"{DEFAULT} weights ({domain}, learned on the prefixes): {kept}, share of the "
              f"stack kept {stacked.share_[domain]:.2f}; 50/80/95% half-widths per unit "
              f"reach {widths}")
    if args.ceiling:
        ceiling(all_tasks, candidates)
    print(f"\ntotal {time.perf_counter() - start:.0f} s, {len(all_tasks)} evaluations; "
          f"mean points held out {np.mean([t.x_target.size for t in all_tasks]):.0f}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
