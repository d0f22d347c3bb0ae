"""The Successive Halving loop, shared by replay, plan and run.

The loop is a generator: it yields a batch of :class:`Advance` orders (train
run ``r`` from ``start`` to ``stop``) and receives the new points of each run.
Who executes the orders — a replay of complete curves, or trainers behind an
executor — is not its business, so the same decisions come out of every mode.
A rung's advances are granted in the policy's order while the budget lasts; the
first one that does not fit is cut short to spend exactly what is left, and
the allocation ends there. The budget is therefore never exceeded, counting
every partial run.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field

import numpy as np

from scalekit.allocate.policies import Policy, PromotionContext
from scalekit.allocate.schedules import SuccessiveHalving
from scalekit.allocate.sweep import Curve, Sweep

_EMPTY = Curve(np.empty(0), np.empty(0), np.empty(0))


@dataclass(frozen=True)
class Advance:
    """Order to train ``run`` from resource ``start`` to ``stop`` at ``cost`` FLOPs."""

    rung: int
    run: str
    start: float
    stop: float
    cost: float


@dataclass
class Allocation:
    """What an allocation did: points seen, resource reached, FLOPs spent, promotions."""

    observed: dict[str, Curve]
    reached: dict[str, float]
    spent: float
    budget: float
    promotions: list[list[str]] = field(default_factory=list)
    advances: list[Advance] = field(default_factory=list)
    exhausted: bool = False


def _join(a: Curve, b: Curve) -> Curve:
    return Curve(np.concatenate([a.resource, b.resource]), np.concatenate([a.compute, b.compute]),
                 np.concatenate([a.loss, b.loss]))


class HalvingLoop:
    """One synchronous SH bracket; :meth:`steps` is the generator, :attr:`state` its progress.

    ``sweep`` provides the cost model (and, for ``plan``, the points seen before);
    ``runs`` are the bracket's candidates (default: all of them, in order).
    """

    def __init__(self, sweep: Sweep, bracket: SuccessiveHalving, policy: Policy, budget: float,
                 *, seed: int = 0, runs: list[str] | None = None) -> None:
        self.sweep, self.bracket, self.policy = sweep, bracket, policy
        self.seed = seed
        self.active = list(runs if runs is not None else sweep.runs)[: bracket.n_runs]
        self.state = Allocation({run: _EMPTY for run in self.active},
                                {run: 0.0 for run in self.active}, 0.0, float(budget))

    def steps(self) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
        state, sweep = self.state, self.sweep
        observed, reached = state.observed, state.reached
        target = self.bracket.rungs[-1].resource
        for rung in self.bracket.rungs:
            if rung.index > 0:
                # one generator per rung, so that a resumed run whose earlier promotions
                # are read back (not drawn again) breaks this rung's ties the same way
                rng = np.random.default_rng([self.seed, rung.index])
                context = PromotionContext(sweep, target, rng, rung.index)
                self.active = list(self.policy.select({r: observed[r] for r in self.active},
                                                      rung.runs, context))
                state.promotions.append(list(self.active))
            batch = []
            for run in self.active:
                cost = sweep.cost(run, reached[run], rung.resource)
                stop = min(rung.resource, sweep.max_resource[run])
                left = state.budget - state.spent
                if cost > left:
                    stop = sweep.resource_after(run, reached[run], left)
                    cost = left
                    state.exhausted = True
                if stop > reached[run]:
                    batch.append(Advance(rung.index, run, reached[run], stop, cost))
                    state.spent = min(state.spent + cost, state.budget)
                    reached[run] = stop
                if state.exhausted:
                    break
            if batch:
                results = yield batch
                for advance in batch:
                    observed[advance.run] = _join(observed[advance.run],
                                                  results.get(advance.run, _EMPTY))
                state.advances.extend(batch)
            if state.exhausted:
                break
        return state


def successive_halving(sweep: Sweep, bracket: SuccessiveHalving, policy: Policy, budget: float,
                       *, seed: int = 0, runs: list[str] | None = None,
                       ) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
    """The generator of :class:`HalvingLoop` (see the module docstring)."""
    return HalvingLoop(sweep, bracket, policy, budget, seed=seed, runs=runs).steps()


def drive(generator: Generator, execute) -> Allocation:
    """Run ``generator`` to the end, answering each batch with ``execute(batch)``."""
    try:
        batch = next(generator)
        while True:
            batch = generator.send(execute(batch))
    except StopIteration as stop:
        return stop.value
