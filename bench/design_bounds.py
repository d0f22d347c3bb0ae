"""How far the parameter bounds move the ScaleBench score: the paper's bounds against the
command line's defaults.

For each task (``bench/scalebench_tasks.py``) the same runs (``random`` picks at the
middle budget, seeds 0..R-1, one design per group) are fitted twice by
:func:`scalekit.design.final_fit` with the default estimator: with the task's law as the
paper bounds it, and with the same expression as ``scalekit fit`` / ``design`` read it
by default (every parameter positive, fitted in log, on (0, inf), the default start
grids), the parameters of either sign given their paper range as ``--bounds`` would
(``resolve_law``: the command line cannot fit them otherwise; ``lr_bsz``'s unbounded
coefficients as -inf:inf). It prints the mean target R² of each and the paired
difference with its standard error. It measures the final fit's dependence; the
design's own (the runs it picks) is not measured here.

    python bench/design_bounds.py [--repeats 3] [--tasks farseer,...]
"""

from __future__ import annotations

import argparse
import re
import warnings

import numpy as np
from scalebench_tasks import TASKS, r2

from scalekit.design import final_fit, replay
from scalekit.errors import InputError
from scalekit.fit import resolve_law


def cli_law(law):
    """``law``'s expression as the command line reads it (``resolve_law``): its inputs
    written as the data's column names, only the signed parameters bounded (by the
    paper's range)."""
    expression = law.extra["expression"]
    for symbol, column in law.extra.get("symbols", {}).items():
        expression = re.sub(rf"\b{symbol}\b", column, expression)
    bounds = {p.name: (p.lower, p.upper) for p in law.params if not p.log}
    return resolve_law(expression, columns=list(law.inputs), bounds=bounds)


def fit_r2(task, law, picks):
    out = []
    for group, rows in zip(task.groups, picks, strict=True):
        frame = group.pool.frame.iloc[rows]
        try:
            fit = final_fit(law, {c: frame[c].to_numpy(float) for c in law.inputs},
                            group.pool.loss[rows])
            out.append(task.sign * fit.predict({c: group.target[c].to_numpy(float)
                                                for c in law.inputs}))
        except InputError:
            out.append(np.full(len(group.target), np.nan))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(f"{'task':17s} {'paper':>7s} {'cli':>7s}  difference (cli - paper) ± s.e.")
    for name in args.tasks.split(","):
        task = TASKS[name]()
        if len(task.outputs) > 1:
            print(f"{name:17s} (five outputs: skipped)")
            continue
        try:
            other = cli_law(task.law)
        except InputError as error:
            print(f"{name:17s} the command line's defaults cannot state it: {error}")
            continue
        paper, cli = [], []
        for seed in range(args.repeats):
            picks = [np.array([c["row"] for c in replay(
                task.law, g.pool, g.target, budget=task.budgets[1] * g.pool.cost.sum(),
                method="random", seed=seed * 1000 + k).chosen]) for k, g in enumerate(task.groups)]
            paper.append(r2(task.y_test, np.concatenate(fit_r2(task, task.law, picks))))
            cli.append(r2(task.y_test, np.concatenate(fit_r2(task, other, picks))))
        d = np.array(cli) - np.array(paper)
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        print(f"{name:17s} {np.mean(paper):7.3f} {np.mean(cli):7.3f}  {d.mean():+.3f} ± {se:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
