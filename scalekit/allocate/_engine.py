"""The Successive Halving loop, shared by replay, plan and run.

The loop is a generator: it yields a batch of :class:`Advance` orders (train
run ``r`` from ``start`` to ``stop``) and receives the new points of each run.
Who executes the orders — a replay of complete curves, or trainers behind an
executor — is not its business, so the same decisions come out of every mode.
A rung's advances are granted in the policy's order while the budget lasts; the
first one that does not fit is cut short to spend exactly what is left, and
the allocation ends there. The budget is therefore never exceeded, counting
every partial run.

With ``fill_budget`` (the default) the bracket is also fitted to the budget as
it goes, so that every policy spends the budget it was given. The bracket's
resources are planned for the worst case (the costliest runs promoted at every
rung); once a rung's runs are chosen, the rest of the schedule (this rung and
those above it) is stretched by the largest factor whose worst-case cost,
counted on the runs actually promoted, fits what is left. Where the promoted
runs end before the top rung does (plain SH keeps the small models that lead
early, and they are soon complete), what is still left goes down the policy's
rankings at the top rung: the runs dropped at the last rung in their rank
order, then those dropped at the rung before, and so on, each trained towards
the top while the budget lasts. Both depend only on the promotions and the
cost model, so a resumed allocation does the same.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from scalekit.allocate._policies import Policy, PromotionContext
from scalekit.allocate._schedules import SuccessiveHalving
from scalekit.allocate._sweep import Curve, Sweep

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
    """What an allocation did: points seen, resource reached, FLOPs spent, promotions, and
    the forecasts it stated for the runs it trained (``commit``: run, compute, loss and
    its intervals, as in :meth:`CommitLoop.forecast <scalekit.allocate.CommitLoop.forecast>`),
    why more than a tenth of the budget was left unspent (None where it was not), and the
    FLOPs not paid because a run continued the checkpoint of a run it extends
    (``continued``)."""

    observed: dict[str, Curve]
    reached: dict[str, float]
    spent: float
    budget: float
    promotions: list[list[str]] = field(default_factory=list)
    advances: list[Advance] = field(default_factory=list)
    exhausted: bool = False
    forecasts: list[dict] = field(default_factory=list)
    unspent_reason: str | None = None
    continued: float = 0.0

    def to_dict(self) -> dict:
        """Plain data (curves as lists); inverse of :meth:`from_dict`."""
        return {"observed": {run: {"resource": c.resource.tolist(), "compute": c.compute.tolist(),
                                   "loss": c.loss.tolist()} for run, c in self.observed.items()},
                "reached": dict(self.reached), "spent": self.spent, "budget": self.budget,
                "promotions": [list(p) for p in self.promotions],
                "advances": [asdict(a) for a in self.advances], "exhausted": self.exhausted,
                "forecasts": [dict(f) for f in self.forecasts],
                "unspent_reason": self.unspent_reason, "continued": self.continued}

    @classmethod
    def from_dict(cls, data: Mapping) -> Allocation:
        def curve(points):
            return Curve(*(np.array(points[k], dtype=float) for k in ("resource", "compute",
                                                                        "loss")))

        return cls({run: curve(c) for run, c in data["observed"].items()},
                   {run: float(v) for run, v in data["reached"].items()}, float(data["spent"]),
                   float(data["budget"]), [list(p) for p in data["promotions"]],
                   [Advance(**a) for a in data["advances"]], bool(data["exhausted"]),
                   [dict(f) for f in data.get("forecasts", [])], data.get("unspent_reason"),
                   float(data.get("continued", 0.0)))


#: Share of the budget left unspent above which an allocation says why (``unspent_reason``).
UNSPENT = 0.1


def _join(a: Curve, b: Curve) -> Curve:
    return Curve(np.concatenate([a.resource, b.resource]), np.concatenate([a.compute, b.compute]),
                 np.concatenate([a.loss, b.loss]))


class HalvingLoop:
    """One synchronous SH bracket; :meth:`steps` is the generator, :attr:`state` its progress.

    ``sweep`` provides the cost model (and, for ``plan``, the points seen before);
    ``runs`` are the bracket's candidates (default: all of them, in order).
    """

    def __init__(self, sweep: Sweep, bracket: SuccessiveHalving, policy: Policy, budget: float,
                 *, seed: int = 0, runs: list[str] | None = None,
                 fill_budget: bool = True) -> None:
        self.sweep, self.bracket, self.policy = sweep, bracket, policy
        self.seed, self.fill_budget = seed, fill_budget
        self.active = list(runs if runs is not None else sweep.runs)[: bracket.n_runs]
        self.state = Allocation({run: _EMPTY for run in self.active},
                                {run: 0.0 for run in self.active}, 0.0, float(budget))
        self.stretch = 1.0  # the factor the bracket's resources are stretched by so far

    def _worst_case(self, rungs, factor: float) -> float:
        """FLOPs of ``rungs`` (the current one first) with their resources times ``factor``:
        the current rung for the active runs, each later one for its ``n_i`` costliest
        advances among them."""
        sweep, reached = self.sweep, self.state.reached
        total = sum(sweep.cost(r, reached[r], rungs[0].resource * factor) for r in self.active)
        for below, rung in zip(rungs, rungs[1:], strict=False):
            steps = sorted((sweep.cost(r, below.resource * factor, rung.resource * factor)
                            for r in self.active), reverse=True)
            total += sum(steps[: rung.runs])
        return total

    def _fit_stretch(self, rungs) -> float:
        """The largest factor, from the current one up to the one that takes the top rung to
        the longest active run's end, whose worst-case cost fits the budget left."""
        left = self.state.budget - self.state.spent
        low = self.stretch
        high = max(self.sweep.max_resource[r] for r in self.active) / rungs[-1].resource
        if high <= low or self._worst_case(rungs, low) > left:
            return low
        if self._worst_case(rungs, high) <= left:
            return high
        for _ in range(60):
            mid = float(np.sqrt(low * high))
            low, high = (mid, high) if self._worst_case(rungs, mid) <= left else (low, mid)
        return low

    def steps(self) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
        state, sweep = self.state, self.sweep
        observed, reached = state.observed, state.reached
        rungs = self.bracket.rungs
        dropped: list[list[str]] = []  # per rung, the runs not promoted, best first
        for rung in rungs:
            reserve = []
            if rung.index > 0:
                # one generator per rung, so that a resumed run whose earlier promotions
                # are read back (not drawn again) breaks this rung's ties the same way
                rng = np.random.default_rng([self.seed, rung.index])
                context = PromotionContext(sweep, rungs[-1].resource * self.stretch, rng,
                                           rung.index)
                keep = len(self.active) if self.fill_budget else rung.runs
                ranking = list(self.policy.select({r: observed[r] for r in self.active},
                                                  keep, context))
                self.active = ranking[: rung.runs]
                dropped.append(ranking[rung.runs:])
                state.promotions.append(list(self.active))
                if self.fill_budget and rung is rungs[-1]:
                    reserve = [run for runs in reversed(dropped) for run in runs]
            if self.fill_budget:
                self.stretch = self._fit_stretch(rungs[rung.index:])
            resource = rung.resource * self.stretch
            batch = []
            for run in self.active + reserve:
                cost = sweep.cost(run, reached[run], resource)
                stop = min(resource, sweep.max_resource[run])
                left = state.budget - state.spent
                if cost > left:
                    stop = sweep.resource_after(run, reached[run], left)
                    cost = left
                    state.exhausted = True
                if stop > reached[run]:
                    batch.append(Advance(rung.index, run, reached[run], stop, cost))
                    state.spent = min(state.spent + cost, state.budget)
                    reached[run] = stop
                    if run in reserve:
                        state.promotions[-1].append(run)
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
        if state.budget - state.spent > UNSPENT * state.budget:
            state.unspent_reason = (
                "every candidate is finished: the sweep costs less than the budget"
                if all(reached[r] >= sweep.max_resource[r] for r in reached) else
                "the bracket reached its top rung with budget to spare (its resources are "
                "planned for the costliest runs it could promote)")
        return state


def successive_halving(sweep: Sweep, bracket: SuccessiveHalving, policy: Policy, budget: float,
                       *, seed: int = 0, runs: list[str] | None = None, fill_budget: bool = True,
                       ) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
    """The generator of :class:`HalvingLoop` (see the module docstring)."""
    return HalvingLoop(sweep, bracket, policy, budget, seed=seed, runs=runs,
                       fill_budget=fill_budget).steps()


def drive(generator: Generator, execute) -> Allocation:
    """Run ``generator`` to the end, answering each batch with ``execute(batch)``."""
    try:
        batch = next(generator)
        while True:
            batch = generator.send(execute(batch))
    except StopIteration as stop:
        return stop.value
