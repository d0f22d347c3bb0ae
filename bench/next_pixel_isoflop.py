"""A small IsoFLOP sweep of next_pixel on the CPU, and whether the compute-optimal split
depends on the metric (issue 30; Yan et al., ICML 2026, next-pixel prediction).

Budgets × sizes: each run of a budget C trains a one-block GPT of width w for
round(C / counted FLOPs per step) steps (batch 32, cosine learning rate), evaluated once at
its end on the held-out digits: the next-pixel ``loss``, ``probe_accuracy`` (higher is
better, analysed as 1 - accuracy), ``completion_nll`` and ``completion_error`` (see
``scalekit.train.tasks.next_pixel``). The final points are written to ``--out`` (CSV) and
compared with :func:`scalekit.isoflop._per_metric.compare_metrics` (approach 2, counted
FLOPs, paired bootstrap over runs). Yan et al.'s direction is reproduced when generation's
D* grows faster than classification's: b(completion_nll) - b(probe_accuracy) > 0 with its
95% interval above 0.

PASS when the sweep finishes within ``--target-seconds`` and every metric's exponents are
finite (an interior optimum at enough budgets); the verdict is printed either way.

    python bench/next_pixel_isoflop.py [--out data/published/next_pixel_isoflop.csv] [--workers 2]
    python bench/next_pixel_isoflop.py --from-csv data/published/next_pixel_isoflop.csv
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pandas as pd

BUDGETS = (5e9, 1e10, 2e10, 4e10)
WIDTHS = (4, 6, 8, 12, 16, 24, 32, 48)
METRICS = ("probe_accuracy", "completion_nll", "completion_error", "loss")
COLUMNS = ("run", "budget", "width", "depth", "steps", "batch_size", "lr", "params", "tokens",
           "compute", *METRICS, "val_loss", "wall_time")
LR = 5e-3
BATCH = 32


def sweep_configs(budgets, widths):
    """One config per budget and width, with the steps that spend the budget."""
    from scalekit.train._config import TrainConfig
    from scalekit.train._loop import build_run

    base = TrainConfig(task="next_pixel", depth=1, batch_size=BATCH, lr=LR, lr_schedule="cosine",
                       evals=1, eval_size=297, device="cpu", options={"probe_images": 300})
    per_step = {w: build_run(base.replace(width=w, steps=1))[2] for w in widths}
    return [(c, base.replace(width=w, steps=max(10, round(c / per_step[w]))))
            for c in budgets for w in widths]


def train_sweep(budgets, widths, workers: int, store: Path) -> pd.DataFrame:
    from scalekit.executors import make_executor, running
    from scalekit.train._sweep import run_sweep

    pairs = sweep_configs(budgets, widths)
    with running(make_executor("local", max_workers=workers)) as pool:
        frame = run_sweep([c for _, c in pairs], store=store, executor=pool)
    frame["budget"] = frame["run"].map({c.name: budget for budget, c in pairs})
    return frame.loc[:, list(COLUMNS)]


def compare(frame: pd.DataFrame, bootstrap: int):
    from scalekit.isoflop._per_metric import compare_metrics

    settings = {"profile": "params", "figures": None, "budgets": sorted(frame["budget"].unique()),
                "budget_tolerance": 0.1, "window": "all", "target_compute": None,
                "bootstrap": bootstrap, "ci_level": 0.95, "convention": "counted",
                "flops_per_param_token": 6.0}
    return compare_metrics(frame, list(METRICS), settings=settings,
                           higher_is_better=["probe_accuracy"], seed=0)


def verdict(pair: dict) -> str:
    """Yan et al.'s direction, read off the pair (probe_accuracy, completion_*)."""
    if not pair["distinguishable"]:
        return "not distinguishable at this scale (the interval of the difference covers 0)"
    if pair["diff_b"] > 0:
        return "reproduced (D* grows faster for generation than for classification)"
    return "reversed (D* grows slower for generation than for classification)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/published/next_pixel_isoflop.csv"))
    parser.add_argument("--from-csv", type=Path, default=None, help="analyse a written sweep")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--budgets", type=int, default=len(BUDGETS), help="first K budgets")
    parser.add_argument("--bootstrap", type=int, default=400)
    parser.add_argument("--target-seconds", type=float, default=900.0)
    args = parser.parse_args()
    from scalekit.formatting import format_with_interval

    started = time.perf_counter()
    if args.from_csv is not None:
        frame = pd.read_csv(args.from_csv, comment="#")
        seconds = math.nan
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            frame = train_sweep(BUDGETS[:args.budgets], WIDTHS, args.workers, Path(tmp) / "runs.db")
        seconds = time.perf_counter() - started
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w") as out:
            out.write(f"# bench/next_pixel_isoflop.py: {len(frame)} runs, {args.budgets} budgets x "
                      f"{len(WIDTHS)} widths, CPU, {seconds:.0f} s wall with {args.workers} "
                      "worker(s); final points on the 297 held-out digits\n")
            frame.to_csv(out, index=False, float_format="%.6g")
        print(f"sweep: {len(frame)} runs in {seconds:.0f} s wall ({args.workers} workers) -> {args.out}")
    result = compare(frame, args.bootstrap)
    print(result.allocations_frame().loc[:, ["metric", "approach", "a", "a_lo", "a_hi",
                                             "b", "b_lo", "b_hi"]].to_string(index=False))
    for pair in result.pairs:
        print(f"{pair['metric_2']} - {pair['metric_1']}: b "
              f"{format_with_interval(pair['diff_b'], (pair['diff_b_lo'], pair['diff_b_hi']))}, a "
              f"{format_with_interval(pair['diff_a'], (pair['diff_a_lo'], pair['diff_a_hi']))}, "
              f"b2/b1 {format_with_interval(pair['ratio_b'], (pair['ratio_b_lo'], pair['ratio_b_hi']))}")
    for pair in result.pairs:
        if pair["metric_1"] == "probe_accuracy" and pair["metric_2"].startswith("completion"):
            print(f"Yan et al.'s direction ({pair['metric_2']} vs probe_accuracy): {verdict(pair)}")
    b = result.allocations_frame().query("approach == '2'")["b"]
    finite = bool(b.notna().all()) and len(b) == len(METRICS)
    fast = not seconds > args.target_seconds
    print(f"every metric's exponents finite: {finite}; sweep wall {seconds:.0f} s "
          f"(target <= {args.target_seconds:.0f} s)  {'PASS' if finite and fast else 'FAIL'}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0 if finite and fast else 1


if __name__ == "__main__":
    raise SystemExit(main())
