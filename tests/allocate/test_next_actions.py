"""``plan``: the next actions from partial curves agree with the full allocation."""

from __future__ import annotations

import pytest

from scalekit.allocate._next_actions import plan_next
from scalekit.allocate._policies import LossPolicy
from scalekit.allocate._replay import allocate
from scalekit.allocate._sweep import sweep_from_frame
from scalekit.allocate._synthetic import early_leader_frame


@pytest.fixture(scope="module")
def frame():
    return early_leader_frame(seed=5, sizes=9, variants=1, points=90)


def test_each_rung_of_the_plan_is_the_replayed_allocation(frame):
    full = sweep_from_frame(frame)
    budget = 0.2 * full.total_compute()
    allocation, bracket = allocate(full, LossPolicy(), budget, seed=0)
    # lay the curves down as an allocation leaves them after each rung, and plan from there
    by_rung = {}
    for advance in allocation.advances:
        by_rung.setdefault(advance.rung, []).append(advance)
    reached = {run: 0.0 for run in full.runs}
    for rung in sorted(by_rung):
        partial = frame[[c <= reached[r] * (1 + 1e-12) for r, c in zip(frame.run, frame.compute,
                                                                       strict=True)]]
        sweep = (sweep_from_frame(partial, max_resource=full.max_resource) if len(partial)
                 else _empty_like(full))
        plan = plan_next(sweep, LossPolicy(), budget, seed=0, reached=reached)
        assert plan.rung == rung
        planned = {a["run"]: a["to"] for a in plan.actions if a["action"] == "continue"}
        assert planned == pytest.approx({a.run: a.stop for a in by_rung[rung]})
        if rung > 0:
            stopped = {a["run"] for a in plan.actions if a["action"] == "stop"}
            before = {a.run for a in by_rung[rung - 1]}
            assert stopped == before - set(planned)
        for advance in by_rung[rung]:
            reached[advance.run] = advance.stop
    final = sweep_from_frame(frame[[c <= reached[r] * (1 + 1e-12) for r, c in
                                    zip(frame.run, frame.compute, strict=True)]],
                             max_resource=full.max_resource)
    done = plan_next(final, LossPolicy(), budget, seed=0, reached=reached)
    assert done.rung is None and not done.actions
    assert done.projected_saving == pytest.approx(1 - done.planned / full.total_compute())
    assert done.planned <= budget


def test_a_run_trained_past_its_rung_continues_from_where_it_is(frame):
    full = sweep_from_frame(frame)
    budget = 0.2 * full.total_compute()

    def plan_from(reached):
        partial = frame[[c <= reached[r] * (1 + 1e-12) for r, c in zip(frame.run, frame.compute,
                                                                       strict=True)]]
        return plan_next(sweep_from_frame(partial, max_resource=full.max_resource), LossPolicy(),
                         budget, seed=0, reached=reached)

    rung = {a["run"]: a["to"] for a in plan_next(_empty_like(full), LossPolicy(), budget,
                                                  seed=0).actions}
    promoted = [a["run"] for a in plan_from(rung).actions if a["action"] == "continue"]
    ahead = promoted[0]                      # trained on to twice the first rung's resource
    reached = {**rung, ahead: 2 * rung[ahead]}
    actions = {a["run"]: a for a in plan_from(reached).actions if a["action"] == "continue"}
    assert ahead in actions and actions[ahead]["to"] > reached[ahead]
    for run, action in actions.items():
        assert action["from"] == pytest.approx(reached[run])
        # the resource is compute here, so the FLOPs left are the resource left
        assert action["flops"] == pytest.approx(action["to"] - reached[run])


def _empty_like(sweep):
    """The candidates before any training: no points, the same cost model."""
    import numpy as np

    from scalekit.allocate._sweep import Curve, Sweep

    empty = Curve(np.empty(0), np.empty(0), np.empty(0))
    return Sweep(sweep.resource_name, {r: empty for r in sweep.runs}, dict(sweep.max_resource),
                 dict(sweep.flops_per_unit), dict(sweep.params))
