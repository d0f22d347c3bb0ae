"""Replay: the budget holds, seeds decide everything, surrogates escape the early-leader trap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.allocate._metrics import best_final_loss, fit_frontier, frontier_law_error, frontier_points
from scalekit.allocate._replay import allocate, fit_bracket, planned_cost, replay, uniform_allocation
from scalekit.allocate._synthetic import early_leader_frame, early_leader_sweep
from scalekit.allocate._sweep import sweep_from_frame
from scalekit.errors import InputError


@pytest.fixture(scope="module")
def sweep():
    return early_leader_sweep(seed=3, sizes=6, variants=2, points=60)


def _spent_from_reached(sweep, allocation):
    """FLOPs implied by how far each run got: advances are contiguous from zero."""
    return sum(sweep.flops_per_unit[r] * min(reached, sweep.max_resource[r])
               for r, reached in allocation.reached.items())


@pytest.mark.parametrize("policy, fraction", [
    *[(p, f) for p in ("loss", "uniform") for f in (0.003, 0.02, 0.07, 0.3)],
    ("forecast", 0.003), ("forecast", 0.05), ("frontier", 0.02),
])
def test_budget_is_never_exceeded(sweep, policy, fraction):
    budget = fraction * sweep.total_compute()
    allocation, _ = allocate(sweep, policy, budget, seed=1)
    assert allocation.spent <= budget
    assert _spent_from_reached(sweep, allocation) <= budget * (1 + 1e-12)
    for run, curve in allocation.observed.items():  # no point beyond what was paid for
        assert np.all(curve.resource <= allocation.reached[run] * (1 + 1e-12))


def test_budget_holds_with_a_fixed_min_resource_that_cannot_be_afforded(sweep):
    budget = 0.01 * sweep.total_compute()
    first = 0.05 * max(sweep.max_resource.values())
    allocation, bracket = allocate(sweep, "loss", budget, min_resource=first, seed=0)
    assert sum(planned_cost(sweep, sweep.runs, bracket)) > budget  # the plan alone overspends
    assert allocation.exhausted
    assert allocation.spent == pytest.approx(budget, rel=1e-9)
    assert _spent_from_reached(sweep, allocation) <= budget * (1 + 1e-12)


def test_fitted_bracket_plan_fits_the_budget(sweep):
    for fraction in (0.01, 0.05, 0.2):
        budget = fraction * sweep.total_compute()
        bracket = fit_bracket(sweep, sweep.runs, budget, eta=3)
        assert sum(planned_cost(sweep, sweep.runs, bracket)) <= budget * (1 + 1e-9)
        assert len(bracket.rungs) == 3  # 12 runs halve by 3 down to one: 12, 4, 1


def test_uniform_gives_every_run_the_same_compute(sweep):
    budget = 0.2 * sweep.total_compute()
    allocation = uniform_allocation(sweep, sweep.runs, budget)
    computes = [sweep.flops_per_unit[r] * allocation.reached[r] for r in sweep.runs]
    assert np.allclose(computes, budget / len(sweep.runs))
    assert allocation.spent == pytest.approx(budget)


def test_uniform_hands_back_the_share_of_runs_that_end_sooner():
    frame = early_leader_frame(seed=0, sizes=3, variants=1, points=10)
    short = frame[frame.run == "n0_v0"].head(2)  # this run ends at a fifth of the others
    frame = pd.concat([frame[frame.run != "n0_v0"], short], ignore_index=True)
    sweep = sweep_from_frame(frame)
    budget = 0.8 * sweep.total_compute()
    allocation = uniform_allocation(sweep, sweep.runs, budget)
    assert allocation.reached["n0_v0"] == sweep.max_resource["n0_v0"]
    assert allocation.spent == pytest.approx(budget)


def test_exhaustive_sees_every_point(sweep):
    allocation, _ = allocate(sweep, "exhaustive", 1.0)
    assert all(len(allocation.observed[r]) == len(sweep.curves[r]) for r in sweep.runs)
    assert allocation.spent == pytest.approx(sweep.total_compute())


def test_same_seed_same_result_other_seed_other_candidates():
    def make(seed):
        return early_leader_sweep(seed=seed, sizes=6, variants=3, points=40)

    kwargs = dict(policies=["uniform", "loss", "forecast"], budgets=[0.05], seeds=[4, 5],
                  n_candidates=12, frontier=False)
    first, again = replay(make, **kwargs), replay(make, **kwargs)
    assert first.rows.equals(again.rows)
    losses = first.rows.set_index(["policy", "seed"])["best_loss"]
    assert losses[("uniform", 4)] != losses[("uniform", 5)]


@pytest.mark.parametrize("seed", [3, 4])
def test_plain_halving_drops_the_eventual_best_run_and_forecast_keeps_it(seed):
    # Every run trains to the same compute; small models lead at the first rungs.
    sweep = early_leader_sweep(seed=seed, sizes=9, variants=3, points=60)
    best = min(sweep.runs, key=sweep.final_loss)
    budget = 0.15 * sweep.total_compute()
    plain, _ = allocate(sweep, "loss", budget, seed=seed)
    guided, _ = allocate(sweep, "forecast", budget, seed=seed)
    early = {r: sweep.curves[r].until(plain.advances[0].stop).loss[-1] for r in sweep.runs}
    assert sweep.params[min(early, key=early.get)] < sweep.params[best]  # the trap is there
    assert best not in plain.promotions[-1][:1]
    assert guided.promotions[-1][0] == best  # its top pick; runs after it only fill the budget
    assert best_final_loss(guided.observed) < best_final_loss(plain.observed)


def test_frontier_points_are_the_lower_envelope():
    rng = np.random.default_rng(0)
    sweep = early_leader_sweep(seed=1, sizes=4, variants=1, points=30)
    compute, loss = frontier_points(sweep.curves)
    everything = sweep.to_frame()
    # slow reference: a point is on the frontier when no cheaper-or-equal point is lower
    for c, value in zip(compute, loss, strict=True):
        cheaper = everything[everything.compute <= c]
        assert value == cheaper.loss.min()
    for c in rng.choice(everything.compute.to_numpy(), 20):
        cheaper = everything[everything.compute <= c].loss.min()
        assert loss[compute <= c].min() == cheaper
    assert np.all(np.diff(loss) < 0)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.assign(loss=f.loss.where(f.index != 5, np.nan)), "finite number > 0"),
    (lambda f: f.assign(compute=f.compute.where(f.index != 7, -1.0)), "finite number > 0"),
    (lambda f: f.drop(columns="run"), "no `run` column"),
    (lambda f: f.drop(columns=["compute", "tokens"]), "`compute` column"),
    (lambda f: pd.concat([f, f.iloc[[3]]]), "two points at the same compute"),
])
def test_bad_curves_are_rejected(change, message):
    frame = early_leader_frame(seed=0, sizes=2, variants=1, points=10)
    with pytest.raises(InputError, match=message):
        sweep_from_frame(change(frame))


def test_unknown_policy_is_rejected(sweep):
    with pytest.raises(InputError, match="The value of `policy` is 'greedy'"):
        allocate(sweep, "greedy", 1e20)


def test_frontier_law_fit_recovers_a_known_frontier():
    # points on L(C) = 1.8 + 300 C^-0.15 exactly: the law and its prediction 10x out
    compute = np.geomspace(1e17, 1e20, 40)
    loss = 1.8 + 300.0 * compute ** -0.15
    from scalekit.allocate._sweep import Curve

    fit = fit_frontier({"a": Curve(compute, compute, loss)})
    assert fit.values["alpha"] == pytest.approx(0.15, rel=1e-3)
    assert fit.values["E"] == pytest.approx(1.8, rel=1e-3)
    reference = fit_frontier({"b": Curve(compute[::2], compute[::2], loss[::2])})
    error = frontier_law_error(fit, reference, [1e20, 1e21])
    assert np.all(error < 1e-4)
    truth = 1.8 + 300.0 * 1e21 ** -0.15
    assert fit.predict({"compute": np.array([1e21])})[0] == pytest.approx(truth, rel=1e-4)


def _chinchilla_grid_sweep():
    """Runs of 8 sizes, each trained to 20 tokens per parameter: small runs end at small computes."""
    from scalekit.allocate._synthetic import chinchilla_loss

    rows = []
    for size in np.geomspace(1e7, 1e9, 8):
        tokens = np.geomspace(1e6, 20 * size, 30)
        rows += [dict(run=f"n{size:.0e}", step=i + 1, compute=6 * size * d, params=size,
                      loss=chinchilla_loss(size, d)) for i, d in enumerate(tokens)]
    return sweep_from_frame(pd.DataFrame(rows), resource="compute")


@pytest.mark.parametrize("fraction", [0.02, 0.05, 0.2])
def test_plain_halving_spends_the_whole_budget_when_its_runs_end_early(fraction):
    from scalekit.allocate._engine import drive, successive_halving
    from scalekit.allocate._policies import LossPolicy
    from scalekit.allocate._replay import reveal

    grid = _chinchilla_grid_sweep()
    budget = fraction * grid.total_compute()
    allocation, bracket = allocate(grid, "loss", budget, seed=0)
    fixed = drive(successive_halving(grid, bracket, LossPolicy(), budget, fill_budget=False),
                  reveal(grid))
    assert fixed.spent < 0.97 * budget  # the worst-case plan leaves part of it unspent
    assert allocation.spent == pytest.approx(budget, rel=1e-9)
    assert _spent_from_reached(grid, allocation) == pytest.approx(budget, rel=1e-9)
    assert best_final_loss(allocation.observed) <= best_final_loss(fixed.observed)


def test_improvement_over_plain_halving_is_read_against_the_same_budget_and_seed():
    result = replay(_chinchilla_grid_sweep(), policies=["uniform", "loss", "forecast"],
                    budgets=[0.05, 0.2], seeds=[0, 1], frontier=False)
    rows = result.rows.set_index(["budget", "seed", "policy"])
    for (budget, seed, _policy), row in rows.iterrows():
        plain = rows.loc[(budget, seed, "loss"), "best_loss"]
        assert row["improvement_vs_sh"] == pytest.approx((plain - row["best_loss"]) / plain)
        assert row["compute_fraction"] == pytest.approx(budget, rel=1e-9)  # all spend the same
