"""The baselines replays compare ``commit`` with, and regret counted as compute."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.allocate import _metrics as metrics
from scalekit.allocate._replay import allocate, replay
from scalekit.allocate._sweep import sweep_from_frame
from scalekit.allocate._synthetic import ladder_sweep


def test_largest_finishes_the_largest_runs_the_budget_can_one_after_the_other():
    sweep = ladder_sweep(seed=0, points=40)
    end = {r: sweep.flops_per_unit[r] * sweep.max_resource[r] for r in sweep.runs}
    budget = 0.05 * sweep.total_compute()
    allocation, _ = allocate(sweep, "largest", budget)
    left, expected = budget, []
    while True:  # a direct implementation of the rule: largest end that fits what is left
        fits = [r for r in sweep.runs if r not in expected and end[r] <= left]
        if not fits:
            break
        expected.append(max(fits, key=lambda r: end[r]))
        left -= end[expected[-1]]
    assert [a.run for a in allocation.advances] == expected
    assert all(a.stop == sweep.max_resource[a.run] for a in allocation.advances)
    assert allocation.spent == pytest.approx(budget - left)
    assert (allocation.unspent_reason is None) == (left <= 0.1 * budget)


def test_sh_finish_gives_halving_half_the_budget_then_finishes_its_best_run():
    sweep = ladder_sweep(seed=0, points=40)
    budget = 0.1 * sweep.total_compute()
    allocation, _ = allocate(sweep, "sh-finish", budget)
    halving, _ = allocate(sweep, "loss", 0.5 * budget)
    first = len(halving.advances)
    assert allocation.advances[:first] == halving.advances
    after = allocation.advances[first:]
    seen = {r: c.loss[-1] for r, c in halving.observed.items()
            if len(c) and halving.reached[r] < sweep.max_resource[r]}
    assert after[0].run == min(seen, key=seen.get)
    assert allocation.spent <= budget * (1 + 1e-12)


def test_compute_regret_is_the_share_of_the_budget_the_best_run_did_not_need():
    # two runs, loss 1/compute and 2/compute: a loss of 0.5 is first reached at compute 2
    compute = np.arange(1.0, 11.0)
    frame = pd.concat([pd.DataFrame({"run": r, "step": compute, "compute": compute,
                                     "loss": k / compute, "params": 1.0})
                       for r, k in (("a", 1.0), ("b", 2.0))])
    sweep = sweep_from_frame(frame, resource="compute")
    assert metrics.compute_regret(sweep.curves, 0.5, 8.0) == pytest.approx(1 - 2 / 8)
    assert metrics.compute_regret(sweep.curves, 0.01, 8.0) != metrics.compute_regret(
        sweep.curves, 0.01, 8.0)  # NaN: no point that low
    # the largest run, finished with a budget of 12, reaches 0.1 first at its last point
    rows = replay(sweep, policies=["largest"], budgets=[12.0], seeds=1, frontier=False,
                  completion=None).rows
    assert rows.best_loss.iloc[0] == pytest.approx(0.1)
    assert rows.compute_regret.iloc[0] == pytest.approx(1 - 10 / 12)
