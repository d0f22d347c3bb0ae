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


def test_runs_that_differ_only_in_length_are_prefixes_under_a_constant_rate_only():
    from scalekit.allocate._continuation import prefix_groups

    ladder = ladder_sweep(seed=0, points=40, plateau=0.3)
    groups = prefix_groups(ladder)
    for run in ladder.runs:  # each run is the prefix of exactly the longer runs of its size
        longer = {r for r in ladder.runs if ladder.params[r] == ladder.params[run]
                  and ladder.max_resource[r] > ladder.max_resource[run]}
        assert set(groups.get(run, [])) == longer
    # cosine schedules of different lengths: the shorter decays first, its curve departs
    rows = []
    for steps in (100, 200, 400):
        t = np.arange(1, steps + 1)
        rows.append(pd.DataFrame({"run": f"s{steps}", "step": t, "compute": t, "params": 1.0,
                                  "loss": (2 + 5 / t ** 0.3) * (1 + 0.05 * np.cos(
                                      np.pi * t / steps))}))
    assert prefix_groups(sweep_from_frame(pd.concat(rows), resource="compute")) == {}


def test_commit_continues_a_run_from_the_checkpoint_of_its_prefix_and_pays_no_flop_twice():
    sweep = ladder_sweep(seed=0, points=40, plateau=0.3)
    budget = 0.02 * sweep.total_compute()
    paid = {}
    for continuation in (False, True):
        allocation, _ = allocate(sweep, "commit", budget, prefixes=None if continuation else {})
        per_size = {}
        for a in allocation.advances:
            per_size.setdefault(sweep.params[a.run], []).append(a)
        paid[continuation] = {size: (sum(a.cost for a in advances),
                                     max(sweep.flops_per_unit[a.run] * a.stop for a in advances))
                              for size, advances in per_size.items()}
        if continuation:
            assert allocation.continued > 0
            assert allocation.spent <= budget * (1 + 1e-12)
    # with continuation, each size costs no more than its furthest-trained run; without, more
    assert all(cost <= reach * (1 + 1e-9) for cost, reach in paid[True].values())
    assert any(cost > reach * 1.01 for cost, reach in paid[False].values())


def test_largest_trains_the_compute_optimal_size_part_way_where_nothing_can_be_finished():
    from scalekit.allocate._synthetic import early_leader_sweep

    sweep = early_leader_sweep(seed=0)  # every run costs 1/27 of the sweep
    budget = 0.02 * sweep.total_compute()
    allocation, _ = allocate(sweep, "largest", budget)
    (advance,) = allocation.advances
    optimal = np.sqrt(budget / 120.0)  # D = 20 N at C = 6 N D
    sizes = sorted(set(sweep.params.values()), key=lambda n: abs(np.log(n / optimal)))
    assert sweep.params[advance.run] == sizes[0]
    assert allocation.spent == pytest.approx(budget)
