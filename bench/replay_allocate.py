"""Evidence for ``scalekit allocate``: replay every policy on real and synthetic sweeps.

Real: the learning curves of Li, Kudugunta and Zettlemoyer (2025), "(Mis)Fitting
scaling laws" (``data/published/misfitting_all_checkpoints.csv``); a candidate
is one (model, peak_lr) configuration, its longest run (most steps) standing
for it; each seed draws 27 of the 35 candidates. Synthetic: a fresh
early-leader sweep per seed (:mod:`scalekit.allocate._synthetic`, 27 runs, every
run trained to the same compute). Budgets are shares of the seed's exhaustive
sweep. For each (budget, policy) the script prints, over the seeds: the mean
best final loss, the mean relative improvement over uniform allocation at the
same budget (with a 95% t-interval), how often the policy beats plain SH, the
compute used as a share of the exhaustive sweep, and the median relative error
of the frontier law L(C) = E + A C^-alpha fitted to the explored points against
the one fitted to all points, at the largest compute and at 10x beyond, and the same
error of two forecast-completed frontiers: explored points plus the joint surrogate's
median continuations of the runs promoted last to their full length ("completed"), and
of every candidate on its logging schedule, runs never trained forecast from their size
by the joint law ("all-completed"); with the share of seeds within 1% at the largest
compute for each of the three. Explored-only stays the primary measure; forecast points
are not measurements. Measures are defined in ``docs/allocate.md``.

With ``--truncation`` (real data only) it also prints bounds: the frontier-law error of
every point up to a compute cap (what explored points alone give when everything below
the cap was seen), against the share of the exhaustive sweep those points cost, and the
share a clairvoyant allocation pays for the same error by training up to the cap only
the runs that own a point of that frontier, on the 35 candidates and on every run of
the file as its own candidate (240); and, on the 35 candidates, the error when every
curve is replaced by the joint surrogate fitted to *every* point (in-sample), with and
without its per-run shifts: the best an all-completion by that surrogate could reach
with unlimited compute.

``--calibration`` measures how often the 80% and 95% intervals that ``commit`` states
with its forecasts hold the loss the run reaches (nominal against achieved coverage per
data set and budget: the runs it commits to and every candidate it compares).

``--targets`` checks the default allocator (``commit``) against its targets instead,
with one setting for every data set, printing PASS or FAIL per target: its regret (the
gap to the lowest loss any single run reaches within the budget), its gain over plain
SH, on every (Mis)Fitting run as its own candidate, on random 60% subsets of them, on
one model size at a time, on the 35-candidate grouping (with the frontier-law error), on
the nanoGPT grid, and its gain on the synthetic early-leader sweeps.

Usage: ``python bench/replay_allocate.py [--seeds 20] [--data real|synthetic|both]
[--budgets 0.02 0.05 0.1] [--json OUT] [--truncation] [--calibration] [--targets]``;
seeds can be split over processes (``--first-seed 5 --seeds 5 --json part.json``) and the
parts summarised together with ``--merge part1.json part2.json ...``.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from scalekit.allocate import _metrics as metrics
from scalekit.allocate._commit import CommitPolicy
from scalekit.allocate._engine import drive
from scalekit.allocate._replay import _candidates, allocation_loop, replay, reveal
from scalekit.allocate._sweep import sweep_from_frame
from scalekit.allocate._synthetic import early_leader_sweep
from scalekit.serialise import dumps

DATA = Path(__file__).resolve().parents[1] / "data" / "published"
POLICIES = ["uniform", "loss", "forecast", "frontier", "commit", "largest", "sh-finish",
            "clairvoyant", "exhaustive"]
#: The policies the targets read: the default allocator and its baselines.
TARGET_POLICIES = ["uniform", "loss", "largest", "sh-finish", "commit"]
#: Schram et al.'s (2026) gain over plain SH on their synthetic sweeps.
SCHRAM_SYNTHETIC_GAIN = 0.0547


def misfitting_sweep(path: Path = DATA / "misfitting_all_checkpoints.csv", *,
                     every_run: bool = False):
    """One complete curve per (model, peak_lr): its longest run, points by step.

    With ``every_run`` each run of the file is its own candidate instead: one
    per (model, peak_lr, total_steps, sweep).
    """
    raw = pd.read_csv(path)
    raw["config"] = raw["model"] + "/lr=" + raw["peak_lr"].astype(str)
    if every_run:
        raw["config"] += "/steps=" + raw["total_steps"].astype(str) + "/" + raw["sweep"]
    runs = (raw.groupby(["config", "sweep", "total_steps"]).size().rename("points")
            .reset_index().sort_values(["config", "total_steps", "points"])
            .groupby("config").tail(1))
    chosen = raw.merge(runs[["config", "sweep", "total_steps"]])
    chosen = chosen.groupby(["config", "current_steps"], as_index=False).last()
    frame = pd.DataFrame({"run": chosen["config"], "step": chosen["current_steps"],
                          "compute": chosen["C"], "tokens": chosen["D"],
                          "loss": chosen["loss"], "params": chosen["N"]})
    return sweep_from_frame(frame, resource="compute", source=str(path))


#: Depths of the nanoGPT grid, in the file's column order (Schram et al.'s MoreInfo.txt).
NANOGPT_LAYERS = (8, 10, 12, 24, 32, 48)
#: Its 11 evaluation steps: ``int(e**i)`` for i = 0 … 9, then the last common step.
NANOGPT_STEPS = tuple(int(np.exp(i)) for i in range(10)) + (17471,)
#: Frontier laws on the nanoGPT grid are fitted from the smallest model's step 148 on (the
#: steps before it are the warm-up plateau near ln(50304) = 10.8 and its first drop).
NANOGPT_MIN_COMPUTE = 6.0 * 12 * 8 * 512 ** 2 * 148


def nanogpt_sweep(path: Path = DATA / "nanogpt_layer_over_embd.csv", *, resource: str = "compute"):
    """The 30 nanoGPT runs of Schram et al.'s companion data (5 widths × 6 depths, 11 steps).

    Each row of the file is one width (``n_embd``) followed by 6 × 11 validation
    losses. The resource is the step; a run's FLOPs per step are ``6 N`` per token
    with ``N = 12 · n_layer · n_embd²`` (non-embedding parameters, Kaplan et al. 2020)
    and the same tokens per step for every run, which cancels in shares of the sweep.
    """
    raw = pd.read_csv(path, header=None).to_numpy(float)
    rows = []
    for line in raw:
        width, losses = int(line[0]), line[1:].reshape(len(NANOGPT_LAYERS), len(NANOGPT_STEPS))
        for depth, curve in zip(NANOGPT_LAYERS, losses, strict=True):
            params = 12.0 * depth * width ** 2
            rows += [dict(run=f"d{depth}-w{width}", step=step, compute=6.0 * params * step,
                          loss=loss, params=params) for step, loss in zip(NANOGPT_STEPS, curve, strict=True)]
    return sweep_from_frame(pd.DataFrame(rows), resource=resource, source=str(path))


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (budget, policy): means over seeds, 95% t-intervals of the gains, shares of seeds."""
    def half_width(values):
        return (stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
                if len(values) > 1 else np.nan)

    out = []
    for (budget, policy), group in rows.groupby(["budget", "policy"], sort=False):
        versus_sh = group["improvement_vs_sh"].to_numpy()
        errors = group.frontier_error_at_max
        out.append(dict(
            budget=budget, policy=policy, seeds=len(group),
            best_loss=group.best_loss.mean(), regret=group.regret.mean(),
            worst_regret=group.regret.max(), compute_regret=group.compute_regret.mean(),
            spent_share=group.spent_share.mean(),
            vs_sh=versus_sh.mean(), vs_sh_ci95=half_width(versus_sh),
            beats_sh=float(np.mean(versus_sh > 1e-12)),
            vs_uniform=group["improvement_vs_uniform"].mean(),
            compute=group.compute_fraction.mean(),
            frontier_err=errors.median(), within_1pct=float(np.mean(errors <= 0.01)),
            within_3pct=float(np.mean(errors <= 0.03)),
            reference_miss=group.reference_miss_at_max.median(),
            completed_err=group.completed_frontier_error_at_max.median(),
            all_completed_err=group.all_completed_frontier_error_at_max.median()))
    return pd.DataFrame(out)


def truncation(sweep, caps=(5e18, 1e19, 2e19, 4e19, 8e19)) -> pd.DataFrame:
    """Frontier-law error at the largest compute from the points with compute <= cap.

    Two allocations per cap: every candidate trained up to the cap, and a
    clairvoyant one that trains up to the cap only the runs owning a point of
    the frontier of those points (it knows the losses before paying for them).
    """
    largest = max(c.compute[-1] for c in sweep.curves.values())
    reference = metrics.fit_frontier(sweep.curves)
    total = sweep.total_compute()
    out = []
    for cap in caps:
        seen = {run: curve.until(cap) for run, curve in sweep.curves.items()}
        frontier = set(zip(*metrics.frontier_points(seen), strict=True))
        owners = [run for run, curve in seen.items()
                  if frontier & set(zip(curve.compute, curve.loss, strict=True))]
        row = dict(cap_flops=cap)
        for label, runs in (("all", list(seen)), ("clairvoyant", owners)):
            chosen = {run: seen[run] for run in runs}
            spent = sum(min(cap, sweep.max_resource[run]) for run in runs)
            row[f"{label}_runs"] = len(runs)
            row[f"{label}_fraction"] = spent / total
            row[f"{label}_error_at_max"] = metrics.frontier_law_error(
                metrics.fit_frontier(chosen), reference, [largest])[0]
        out.append(row)
    return pd.DataFrame(out)


def joint_law_bound() -> pd.DataFrame:
    """Frontier-law error at the largest compute when the joint surrogate fitted to every
    point of the 35 candidates replaces their losses (at the same computes)."""
    from scalekit.allocate._forecasters import unseen_quantiles
    from scalekit.allocate._sweep import Curve
    from scalekit.surrogates._joint import JointSurrogate

    sweep = misfitting_sweep()
    largest = max(c.compute[-1] for c in sweep.curves.values())
    reference = metrics.fit_frontier(sweep.curves)
    size = {run: sweep.params[run] for run in sweep.runs}
    points = [(run, c, loss) for run, curve in sweep.curves.items()
              for c, loss in zip(curve.compute, curve.loss, strict=True)]
    runs, compute, loss = (np.array(v) for v in zip(*points, strict=True))
    sizes = np.array([size[run] for run in runs])
    model = JointSurrogate().fit(compute / sizes, loss, runs=runs, sizes=sizes)
    answers = {
        "with per-run shifts": lambda run, c: model.predict(c / size[run], runs=run),
        "size term only": lambda run, c: unseen_quantiles(model, size[run], c / size[run],
                                                          [0.5])[:, 0]}
    out = []
    for label, answer in answers.items():
        curves = {run: Curve(curve.compute, curve.compute, answer(run, curve.compute))
                  for run, curve in sweep.curves.items()}
        error = metrics.frontier_law_error(metrics.fit_frontier(curves), reference, [largest])[0]
        out.append(dict(joint_law_fitted_to_every_point=label, frontier_error_at_max=error))
    return pd.DataFrame(out)


#: Data sets: seed -> sweep, candidates drawn per seed (None: all) and the compute from which
#: the frontier laws are fitted (the first, warm-up checkpoints are not described by the law).
DATASETS = {
    "real": (lambda seed: misfitting_sweep(), 27, 1e18),
    "every": (lambda seed: misfitting_sweep(every_run=True), None, 1e18),
    "nanogpt": (lambda seed: nanogpt_sweep(), 24, NANOGPT_MIN_COMPUTE),
    "synthetic": (lambda seed: early_leader_sweep(seed=seed), None, 0.0),
}


def run(name: str, seeds: list[int], budgets: list[float], completion: bool) -> dict:
    make, candidates, min_compute = DATASETS[name]
    start = time.perf_counter()
    result = replay(make if name == "synthetic" else make(0), policies=POLICIES,
                    budgets=budgets, seeds=seeds, n_candidates=candidates,
                    frontier_min_compute=min_compute,
                    completion="joint" if completion else None)
    seconds = time.perf_counter() - start
    show(name, result.rows, seconds, result.exhaustive_compute)
    return {"data": name, "seeds": seeds, "seconds": seconds,
            "exhaustive_flops": result.exhaustive_compute,
            "rows": result.rows.to_dict(orient="records")}


def show(name: str, rows: pd.DataFrame, seconds: float, exhaustive: float) -> None:
    summary = summarise(rows)
    convention = {"real": "the file's C column (FLOPs as logged)", "every": "the file's C column",
                  "nanogpt": "6·N per token, N = 12·n_layer·n_embd²"}.get(name, "6·N·D")
    with pd.option_context("display.width", 220, "display.max_columns", 30,
                           "display.float_format", "{:.4g}".format):
        print(f"\n== {name}: {rows.seed.nunique()} seeds, {seconds:.0f} s; mean exhaustive "
              f"sweep {exhaustive:.3g} FLOPs; compute: {convention} ==")
        print(summary.to_string(index=False))


def _replay(sweep, seeds, budgets, *, candidates=None, frontier=False, min_compute=0.0):
    return replay(sweep, policies=TARGET_POLICIES, budgets=budgets, seeds=seeds,
                  n_candidates=candidates, frontier=frontier, completion=None,
                  frontier_min_compute=min_compute).rows


def _verdict(label: str, ok: bool, detail: str) -> bool:
    print(f"{'PASS' if ok else 'FAIL'}  {label}: {detail}")
    return ok


def _of(rows, policy, budget, column):
    return rows[(rows.policy == policy) & (rows.budget == budget)][column].to_numpy()


def per_size(seeds: list[int], budgets=(0.05, 0.2)) -> pd.DataFrame:
    """The default allocator against plain SH on each model size of the (Mis)Fitting runs
    alone (its learning rates x schedule lengths, every run its own candidate)."""
    sweep = misfitting_sweep(every_run=True)
    out = []
    for size in sorted({sweep.params[r] for r in sweep.runs}):
        runs = [r for r in sweep.runs if sweep.params[r] == size]
        if len(runs) < 3:
            continue
        rows = _replay(sweep.subset(runs), seeds, list(budgets))
        for budget in budgets:
            out.append(dict(size=size, runs=len(runs), budget=budget,
                            gain_vs_sh=_of(rows, "commit", budget, "improvement_vs_sh").mean(),
                            regret=_of(rows, "commit", budget, "regret").mean(),
                            sh_regret=_of(rows, "loss", budget, "regret").mean()))
    return pd.DataFrame(out)


def targets(seeds: list[int]) -> bool:
    """Every target of the default allocator (issue 27), one line each, PASS or FAIL."""
    start = time.perf_counter()
    ok = []
    every = _replay(misfitting_sweep(every_run=True), seeds, [0.02, 0.05])
    for budget, limit in ((0.05, 0.03), (0.02, 0.05)):
        regret = _of(every, "commit", budget, "regret")
        gain = _of(every, "commit", budget, "improvement_vs_sh")
        ok.append(_verdict(f"every run, {budget:.0%}: regret <= {limit:.0%}",
                           regret.mean() <= limit, f"mean regret {regret.mean():.2%} "
                           f"(plain SH {_of(every, 'loss', budget, 'regret').mean():.2%})"))
        ok.append(_verdict(f"every run, {budget:.0%}: >= 2.84% below plain SH on >= 90% of seeds",
                           np.mean(gain >= 0.0284) >= 0.9,
                           f"{np.mean(gain >= 0.0284):.0%} of seeds; mean gain {gain.mean():.2%}"))
    draws = _replay(misfitting_sweep(every_run=True), seeds[:10], [0.05],
                    candidates=int(0.6 * 240))
    regret = _of(draws, "commit", 0.05, "regret")
    ok.append(_verdict("60% subsets (10 draws), 5%: mean regret <= 5%, worst <= 8%",
                       regret.mean() <= 0.05 and regret.max() <= 0.08,
                       f"mean {regret.mean():.2%}, worst {regret.max():.2%}"))
    sizes = per_size(seeds)
    with pd.option_context("display.float_format", "{:.4g}".format):
        print(sizes.to_string(index=False))
    for budget, group in sizes.groupby("budget"):
        ok.append(_verdict(f"one size at a time, {budget:.0%}: no worse than plain SH on average, "
                           "better on >= half the sizes",
                           group.gain_vs_sh.mean() >= 0 and np.mean(group.gain_vs_sh > 0) >= 0.5,
                           f"mean gain {group.gain_vs_sh.mean():.2%}, better on "
                           f"{int(np.sum(group.gain_vs_sh > 0))} of {len(group)} sizes"))
    grouped = _replay(misfitting_sweep(), seeds, [0.05, 0.2], candidates=27, frontier=True,
                      min_compute=1e18)
    for budget, law_limit in ((0.05, 0.03), (0.2, 0.01)):
        regret = _of(grouped, "commit", budget, "regret")
        error = np.median(_of(grouped, "commit", budget, "frontier_error_at_max"))
        miss = np.median(_of(grouped, "commit", budget, "reference_miss_at_max"))
        ok.append(_verdict(f"35 candidates, {budget:.0%}: regret <= 3%", regret.mean() <= 0.03,
                           f"mean regret {regret.mean():.2%}"))
        ok.append(_verdict(f"35 candidates, {budget:.0%}: frontier-law error <= {law_limit:.0%}",
                           error <= law_limit, f"median {error:.2%} (reference's own miss "
                           f"{miss:.2%})"))
    nano = _replay(nanogpt_sweep(), seeds, [0.05, 0.1, 0.2], candidates=24)
    for budget in (0.05, 0.1, 0.2):
        regret = _of(nano, "commit", budget, "regret")
        ok.append(_verdict(f"nanoGPT grid, {budget:.0%}: regret <= 5%", regret.mean() <= 0.05,
                           f"mean regret {regret.mean():.2%} (plain SH "
                           f"{_of(nano, 'loss', budget, 'regret').mean():.2%})"))
    synthetic = _replay(lambda seed: early_leader_sweep(seed=seed), seeds,
                        [0.01, 0.02, 0.05, 0.1, 0.2])
    for budget in (0.01, 0.02, 0.05, 0.1, 0.2):
        gain = _of(synthetic, "commit", budget, "improvement_vs_sh").mean()
        print(f"info  synthetic early-leader, {budget:.0%}: gain over plain SH {gain:.2%} "
              f"({'reaches' if gain >= SCHRAM_SYNTHETIC_GAIN else 'below'} Schram et al.'s "
              f"{SCHRAM_SYNTHETIC_GAIN:.2%})")
    print(f"{sum(ok)} of {len(ok)} targets met; {time.perf_counter() - start:.0f} s")
    return all(ok)


#: The replays the calibration of commit's forecasts is measured on: sweep, candidates per seed.
CALIBRATION = {"real": (misfitting_sweep, 27), "every": (partial(misfitting_sweep, every_run=True),
                                                         None),
               "nanogpt": (nanogpt_sweep, 24)}


def forecast_checks(sweep, runs, budget: float) -> list[dict]:
    """One ``commit`` replay's forecasts against the losses the runs reach (from the full
    curves): each run it commits to or spends the rest on ("committed": the forecast at
    the compute it is trained to), and every candidate it did not probe ("candidates": the
    end-of-schedule forecasts it compares, against each run's final loss)."""
    loop, _ = allocation_loop(sweep, CommitPolicy(), budget, runs=runs)
    allocation = drive(loop.steps(), reveal(sweep))
    probed = set(loop.decisions[0]["runs"])
    others = ([dict(run=r, **loop.forecast(r)) for r in runs if r not in probed]
              if loop.law is not None else [])
    return ([dict(kind="committed", **row) for row in
             metrics.forecast_checks(allocation.forecasts, sweep)]
            + [dict(kind="candidates", **row) for row in metrics.forecast_checks(others, sweep)])


def calibration(seeds: list[int], budgets: list[float]) -> pd.DataFrame:
    """Nominal against achieved coverage of commit's 80% and 95% forecast intervals per data
    set, budget and kind of forecast (:func:`forecast_checks`) over ``seeds``: forecasts
    made, those with an interval (``stated``), the share of those whose interval holds the
    loss reached, the median relative error of every forecast, the median of how far
    the 80% interval's upper end lies above its forecast (relative to it) and the share of
    stated 80% intervals with a finite upper end (``bounded_80``; the rest are "at least"
    bounds). The every-run replay draws no candidates, so its seeds repeat one allocation
    per budget."""
    rows = []
    for name, (make, candidates) in CALIBRATION.items():
        full = make()
        for seed in seeds:
            sweep, pool = _candidates(full, seed, candidates)
            for budget in budgets:
                rows += [dict(data=name, budget=budget, seed=seed, **row) for row in
                         forecast_checks(sweep, pool, budget * sweep.total_compute())]
    frame = pd.DataFrame(rows)
    frame["error"] = frame.forecast / frame.truth - 1
    frame["bounded"] = np.where(frame["covered_80%"].notna(), np.isfinite(frame["upper_80%"]),
                                np.nan)
    table = (frame.groupby(["data", "budget", "kind"], sort=False)
             .agg(forecasts=("run", "size"),
                  stated=("covered_80%", "count"),
                  covered_80=("covered_80%", "mean"), covered_95=("covered_95%", "mean"),
                  median_abs_error=("error", lambda v: v.abs().median()),
                  median_upper_80=("upper_80%", "median"),
                  bounded_80=("bounded", "mean"))
             .reset_index())
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--data", choices=[*DATASETS, "all"], nargs="+", default=["all"])
    parser.add_argument("--no-completion", action="store_true",
                        help="skip the forecast-completed frontier errors (faster)")
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.02, 0.05, 0.1, 0.2],
                        help="shares of the exhaustive sweep")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--merge", type=Path, nargs="+")
    parser.add_argument("--truncation", action="store_true",
                        help="also print the explored-only error of truncated exhaustive sweeps")
    parser.add_argument("--targets", action="store_true",
                        help="check the default allocator's targets (PASS/FAIL) and exit")
    parser.add_argument("--calibration", action="store_true",
                        help="measure the coverage of commit's forecast intervals and exit")
    args = parser.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    if args.calibration:
        with pd.option_context("display.width", 200, "display.float_format", "{:.3g}".format):
            print(calibration(seeds, args.budgets).to_string(index=False))
        return
    if args.targets:
        raise SystemExit(0 if targets(seeds) else 1)
    if args.truncation:
        with pd.option_context("display.float_format", "{:.4g}".format):
            print("== real: the 35 candidates' points up to a compute cap (resource: compute) ==")
            print(truncation(misfitting_sweep()).to_string(index=False))
            print("== real: every run of the file as a candidate, points up to a compute cap ==")
            print(truncation(misfitting_sweep(every_run=True)).to_string(index=False))
            print(joint_law_bound().to_string(index=False))
    if args.merge:
        parts = [part for path in args.merge for part in json.loads(path.read_text())]
        for name in dict.fromkeys(part["data"] for part in parts):
            mine = [part for part in parts if part["data"] == name]
            rows = pd.DataFrame([row for part in mine for row in part["rows"]])
            show(name, rows, sum(part["seconds"] for part in mine),
                 float(np.mean([part["exhaustive_flops"] for part in mine])))
        return
    names = list(DATASETS) if "all" in args.data else args.data
    results = [run(name, seeds, args.budgets, not args.no_completion) for name in names]
    if args.json:
        args.json.write_text(dumps(results) + "\n")


if __name__ == "__main__":
    main()
