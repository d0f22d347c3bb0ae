"""Baselines a reviewer would try against ``commit`` (replays only).

- ``largest``: no learning at all; finish the largest-compute run the budget can
  finish, then, with what is left, the largest one that can still be finished,
  and so on (ties: the size nearest 20 tokens per parameter, Hoffmann et al. 2022);
  where none can be finished, the run whose size is nearest 20 tokens per parameter
  at the budget is trained part-way with all of it.
- ``sh-finish``: plain Successive Halving (lowest current loss promoted) on half the
  budget, then its survivor, the unfinished run with the lowest loss seen, trained
  towards the end of its schedule with everything left (the next one where it ends
  before the budget does).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping

import numpy as np

from scalekit.allocate._engine import UNSPENT, Advance, Allocation, HalvingLoop, _join
from scalekit.allocate._policies import LossPolicy
from scalekit.allocate._sweep import Curve, Sweep

_EMPTY = Curve(np.empty(0), np.empty(0), np.empty(0))
#: The baselines :func:`baseline_loop` builds.
BASELINES = ("largest", "sh-finish")
#: Share of the budget ``sh-finish`` gives Successive Halving.
SH_SHARE = 0.5


def _score(sweep: Sweep, run: str) -> tuple[float, float, str]:
    """Largest compute first, then the size nearest 20 tokens per parameter."""
    compute = sweep.flops_per_unit[run] * sweep.max_resource[run]
    size = float(sweep.params.get(run, np.nan))
    off = abs(np.log(compute / (120.0 * size ** 2))) if np.isfinite(size) and size > 0 else 0.0
    return -compute, off, run


def _train(state: Allocation, sweep: Sweep, run: str, rung: int):
    """Train ``run`` towards its end with what is left; yields one batch."""
    start = state.reached[run]
    left = state.budget - state.spent
    cost = sweep.cost(run, start, sweep.max_resource[run])
    stop = sweep.max_resource[run]
    if cost > left * (1 + 1e-12):
        stop, cost, state.exhausted = sweep.resource_after(run, start, left), left, True
    if stop <= start:
        return
    advance = Advance(rung, run, start, stop, cost)
    state.spent = min(state.spent + cost, state.budget)
    state.reached[run] = stop
    got = (yield [advance]).get(run, _EMPTY)
    state.observed[run] = _join(state.observed[run], got)
    state.advances.append(advance)
    state.promotions.append([run])


def largest_steps(sweep: Sweep, budget: float, runs: list[str]
                  ) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
    """The ``largest`` baseline's generator."""
    state = Allocation({r: _EMPTY for r in runs}, {r: 0.0 for r in runs}, 0.0, float(budget))
    rung = 0
    while True:
        left = state.budget - state.spent
        can = [r for r in runs if state.reached[r] < sweep.max_resource[r]
               and sweep.cost(r, state.reached[r], sweep.max_resource[r]) <= left * (1 + 1e-12)]
        if not can:
            break
        yield from _train(state, sweep, min(can, key=lambda r: _score(sweep, r)), rung)
        rung += 1
    if not state.advances:  # nothing can be finished: the compute-optimal size, part-way
        near = {r: abs(np.log(budget / (120.0 * sweep.params.get(r, np.nan) ** 2)))
                for r in runs}
        pick = min(runs, key=lambda r: (near[r] if np.isfinite(near[r]) else 0.0,
                                        _score(sweep, r)))
        yield from _train(state, sweep, pick, rung)
    if state.budget - state.spent > UNSPENT * state.budget:
        state.unspent_reason = ("no unfinished candidate can be finished with what is left"
                                if any(state.reached[r] < sweep.max_resource[r] for r in runs)
                                else "every candidate is finished: the sweep costs less "
                                     "than the budget")
    return state


def sh_finish_steps(sweep: Sweep, budget: float, runs: list[str], *, eta: int = 3, seed: int = 0
                    ) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
    """The ``sh-finish`` baseline's generator."""
    from scalekit.allocate._replay import fit_bracket

    bracket = fit_bracket(sweep, runs, SH_SHARE * budget, eta=eta)
    loop = HalvingLoop(sweep, bracket, LossPolicy(), SH_SHARE * budget, seed=seed, runs=runs)
    state = yield from loop.steps()
    state.budget, state.exhausted = float(budget), False
    rung = len(bracket.rungs)
    while state.spent < state.budget * (1 - 1e-9) and not state.exhausted:
        seen = [r for r in runs if len(state.observed[r])
                and state.reached[r] < sweep.max_resource[r]]
        if not seen:
            break
        survivor = min(seen, key=lambda r: (float(state.observed[r].loss[-1]), r))
        yield from _train(state, sweep, survivor, rung)
        rung += 1
    if state.budget - state.spent > UNSPENT * state.budget:
        state.unspent_reason = "every run Successive Halving trained is finished"
    return state


def baseline_loop(name: str, sweep: Sweep, budget: float, runs: list[str], *, eta: int = 3,
                  seed: int = 0) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
    """The generator of the baseline called ``name`` (one of :data:`BASELINES`)."""
    if name == "largest":
        return largest_steps(sweep, budget, runs)
    return sh_finish_steps(sweep, budget, runs, eta=eta, seed=seed)
