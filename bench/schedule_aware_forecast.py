"""The default forecaster with and without the runs' learning-rate schedules (issue 25, item 6).

Data: ``data/published/misfitting_all_checkpoints.csv`` (Li, Kudugunta &
Zettlemoyer 2025): one curve per (model, peak_lr, sweep, total_steps), x =
``current_steps``, y = C4 loss, each cut at 10/20/30/50% of its last step and
forecast to its end (a cut enters when its prefix has >= 5 points). Every run's
schedule is known: a cosine from ``peak_lr`` to 0.1 x ``peak_lr`` over
``total_steps`` after a 50-step linear warm-up (the repository's training
settings, PROVENANCE.md).

With ``--data multipower`` the same on the 18 curves of Luo et al. (2025)
(``data/published/multipower/{25,100}``: nine schedules each -- constant,
cosine, WSD and two-stage -- for a 25M and a 100M model), whose ``lr`` column
gives the schedule (:func:`scalekit.schedules.schedule_from_series`).

With ``--data olmo`` the C4 loss curves of the 16 OLMo ladder runs of Bhagia et
al. (2024) (``data/published/olmo_ladder``); their schedules are not in the
data but rebuilt from the repository's ladder script: a cosine with warm-up
(``alpha_f`` = 0.1, so to 0.1 x peak, at the run's last step), the warm-up
``N / batch`` steps, i.e. the last step over ``20 k`` for a ``k x C`` run
(PROVENANCE.md).

The arms run ``stacked-backtest`` on the same tasks, grouped by cut: *step,
blind* forecasts loss against the step without the schedule (the default before
issue 25's annealing term); *step* against the step with each task's ``rates``
(the default: it takes the loss as a curve at the peak rate lowered by the
multi-power law's loss drop, :mod:`scalekit.surrogates._backtest_stack`); *S1* against
the area under the rate (:func:`scalekit.surrogates._schedule_axis.area_task`).
No truth reaches any arm (the default learns only from the prefixes), so every
curve is scored:
``final`` = mean |ln forecast - ln truth| at each curve's last point,
``rmse`` = mean over curves of the RMSE of ln loss over the held-out points,
``c50/c80/c95`` = share of the held-out points inside the central intervals.

Checks (PASS/FAIL): the default (step, with the schedule) is the best arm on
the pooled final error; its pooled 50/80/95% coverage within 5 points of
nominal.

Run: ``python bench/schedule_aware_forecast.py [--data multipower|olmo] [--stride K]`` (every K-th run;
about ten minutes for all 264 tasks on 2 shared cores).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from scalekit.schedules import parse_schedule, schedule_from_series
from scalekit.surrogates._evaluate import LEVELS, QUANTILES, Task, cut_curves, median_column
from scalekit.surrogates._forecast import default_method
from scalekit.surrogates._schedule_axis import area_task

DATA = Path(__file__).resolve().parents[1] / "data" / "published"
FRACTIONS = (0.1, 0.2, 0.3, 0.5)


def cut(frame: pd.DataFrame, x: str, schedules: dict) -> dict[str, list[Task]]:
    """Every run cut at ``FRACTIONS``: the tasks of each arm (module docstring)."""
    arms: dict[str, list[Task]] = {"step, blind": [], "step": [], "S1": []}
    for fraction, tasks_ in cut_curves(frame, FRACTIONS, x=x, y="loss").items():
        for t in tasks_:
            t = replace(t, group=f"cut {fraction:.0%}")
            arms["step, blind"].append(t)
            arms["step"].append(replace(t, rates=schedules[t.run].rates))
            arms["S1"].append(area_task(t, schedules[t.run]))
    return arms


def multipower_tasks(stride: int) -> dict[str, list[Task]]:
    """The curves of Luo et al. (2025), their schedules from their ``lr`` columns."""
    parts = []
    for size in ("25", "100"):
        for path in sorted((DATA / "multipower" / size).glob("*.csv")):
            part = pd.read_csv(path)
            part["run"] = f"{size}M|{path.stem}"
            parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["run"].isin(sorted(frame["run"].unique())[::stride])]
    schedules = {run: schedule_from_series(curve["step"], curve["lr"], name=run)
                 for run, curve in frame.groupby("run")}
    return cut(frame, "step", schedules)


def olmo_tasks(stride: int) -> dict[str, list[Task]]:
    """The OLMo ladder's C4 curves, their schedules rebuilt from the ladder script."""
    parts, schedules = [], {}
    for path in sorted((DATA / "olmo_ladder").glob("*xC.csv")):
        part = pd.read_csv(path)[["_step", "eval/c4_en-validation/CrossEntropyLoss"]].dropna()
        part.columns = ["step", "loss"]
        part = part[part["step"] > 0].assign(run=path.stem)
        parts.append(part)
        times = int(path.stem.split("-")[1].removesuffix("xC"))
        last = int(part["step"].max())
        schedules[path.stem] = parse_schedule(f"cosine:warmup={round(last / (20 * times))},"
                                              f"peak=1,final=0.1,total={last}")
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["run"].isin(sorted(frame["run"].unique())[::stride])]
    return cut(frame, "step", schedules)


def misfitting_tasks(stride: int) -> dict[str, list[Task]]:
    """The (Mis)Fitting cut tasks, their cosine schedules from the training settings."""
    frame = pd.read_csv(DATA / "misfitting_all_checkpoints.csv")
    frame["run"] = (frame["model"] + "|" + frame["peak_lr"].astype(str) + "|" + frame["sweep"]
                    + "|" + frame["total_steps"].astype(str))
    frame = frame[frame["run"].isin(sorted(frame["run"].unique())[::stride])]
    schedules = {run: parse_schedule(f"cosine:warmup=50,peak={row.peak_lr},"
                                     f"final={0.1 * row.peak_lr},total={int(row.total_steps)}")
                 for run, row in frame.groupby("run").first().iterrows()}
    return cut(frame, "current_steps", schedules)


def scores(tasks_: list[Task], quantiles: list[np.ndarray]) -> pd.DataFrame:
    median = median_column()
    rows = []
    for t, q in zip(tasks_, quantiles, strict=True):
        lq, ly = np.log(q[: t.x_target.size]), np.log(t.y_target)
        row = {"cut": t.group, "final": abs(lq[-1, median] - ly[-1]),
               "rmse": np.sqrt(np.mean((lq[:, median] - ly) ** 2)), "points": ly.size}
        for level in LEVELS:
            lo = int(np.argmin(np.abs(QUANTILES - (1 - level) / 2)))
            hi = int(np.argmin(np.abs(QUANTILES - (1 + level) / 2)))
            row[f"c{int(level * 100)}"] = float(np.sum((lq[:, lo] <= ly) & (ly <= lq[:, hi])))
        rows.append(row)
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    def one(part):
        out = {"curves": len(part), "final": part["final"].mean(), "rmse": part["rmse"].mean()}
        out.update({c: part[c].sum() / part["points"].sum() for c in ("c50", "c80", "c95")})
        return pd.Series(out)
    per_cut = table.groupby("cut").apply(one, include_groups=False)
    per_cut.loc["all"] = one(table)
    return per_cut


def main() -> int:
    threadpool_limits(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=1, help="every K-th run")
    parser.add_argument("--data", choices=("misfitting", "multipower", "olmo"),
                        default="misfitting")
    args = parser.parse_args()
    arms = {"misfitting": misfitting_tasks, "multipower": multipower_tasks,
            "olmo": olmo_tasks}[args.data](args.stride)
    start = time.perf_counter()
    results = {name: summary(scores(arm, default_method()(arm))) for name, arm in arms.items()}
    pd.set_option("display.width", 200)
    for name, table in results.items():
        print(f"stacked-backtest against {name}:")
        print(table.round(4).to_string())
        print()
    failed = False
    better = min(results, key=lambda name: results[name].loc["all", "final"])
    ok = better == "step"
    failed |= not ok
    finals = ", ".join(f"{name} {table.loc['all', 'final']:.4f}" for name, table in results.items())
    print(f"best arm on the pooled final error: {better} ({finals}); the default forecasts "
          f"against the step with the schedule: {'PASS' if ok else 'FAIL'}")
    for level in LEVELS:
        cover = results["step"].loc["all", f"c{int(level * 100)}"]
        ok = abs(cover - level) <= 0.05
        failed |= not ok
        print(f"default {level:.0%} coverage {cover:.3f} (target {level - 0.05:.2f}-"
              f"{level + 0.05:.2f}): {'PASS' if ok else 'FAIL'}")
    print(f"\n{len(arms['step'])} tasks, {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
