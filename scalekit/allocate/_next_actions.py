"""Next actions of an allocation from the partial curves seen so far (``plan`` mode).

The allocation loop (Successive Halving, or the ``commit`` allocator) is
replayed on the points already logged: every
advance a run has already made is answered from its curve, every promotion is
made again by the policy, and the first rung that asks for training not yet
done gives the next actions — which runs continue, to which resource, and
which stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from scalekit.allocate._engine import Advance
from scalekit.allocate._policies import Policy
from scalekit.allocate._replay import allocation_loop, planned_cost
from scalekit.allocate._schedules import SuccessiveHalving
from scalekit.allocate._sweep import Sweep
from scalekit.formatting import format_number
from scalekit.results import ResultProtocol


@dataclass(repr=False)
class Plan(ResultProtocol):
    """What to do next.

    Attributes
    ----------
    bracket : SuccessiveHalving or None
        The schedule, fitted to the budget (None for the ``commit`` allocator).
    rung : int or None
        The rung the next actions belong to (None when the allocation is finished).
    actions : list of dict
        ``{"run", "action": "continue", "from", "to", "flops"}`` for each run to
        train further and ``{"run", "action": "stop", "at"}`` for each run dropped.
    spent : float
        FLOPs already spent on the advances the plan counts as done.
    planned : float
        Worst-case FLOPs of the whole bracket (at most the budget).
    exhaustive : float
        FLOPs of training every candidate to its end.
    """

    bracket: SuccessiveHalving
    rung: int | None
    actions: list[dict]
    spent: float
    planned: float
    exhaustive: float
    promotions: list[list[str]]
    decisions: list[dict] = field(default_factory=list)

    @property
    def projected_saving(self) -> float:
        """``1 - planned / exhaustive``: the share of the exhaustive sweep's FLOPs not spent."""
        return 1.0 - self.planned / self.exhaustive

    def to_dict(self) -> dict:
        """Plain data (with the derived ``finished``, ``projected_saving``, ``rungs``);
        inverse of :meth:`from_dict`."""
        return {"rung": self.rung, "finished": self.rung is None, "actions": self.actions,
                "spent_flops": self.spent, "planned_flops": self.planned,
                "exhaustive_flops": self.exhaustive, "projected_saving": self.projected_saving,
                "promotions": self.promotions,
                "bracket": None if self.bracket is None else asdict(self.bracket),
                "rungs": [] if self.bracket is None else [
                    {"rung": r.index, "runs": r.runs, "resource": r.resource}
                    for r in self.bracket.rungs],
                "decisions": [dict(d) for d in self.decisions]}

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        bracket = data.get("bracket")
        return cls(None if bracket is None else SuccessiveHalving(**bracket), data["rung"],
                   list(data["actions"]), float(data["spent_flops"]),
                   float(data["planned_flops"]), float(data["exhaustive_flops"]),
                   [list(p) for p in data["promotions"]],
                   [dict(d) for d in data.get("decisions", [])])

    def _summary_title(self) -> str:
        return ("Allocation finished: nothing left to train" if self.rung is None
                else f"Next actions (rung {self.rung})")

    def _summary_sections(self):
        def action(a: dict) -> str:
            if a["action"] == "stop":
                return f"stop {a['run']} at {format_number(a['at'])}"
            return (f"continue {a['run']} from {format_number(a['from'])} to "
                    f"{format_number(a['to'])} ({format_number(a['flops'])} FLOPs)")

        decisions = [("Decisions", [f"phase {d['phase']}: {d['action']} {', '.join(d['runs'])} "
                                    f"({d['why']})" for d in self.decisions])]
        return [("Actions", [action(a) for a in self.actions]),
                *(decisions if self.bracket is None else []),
                ("Compute", [("spent (FLOPs)", self.spent), ("planned (FLOPs)", self.planned),
                             ("exhaustive sweep (FLOPs)", self.exhaustive),
                             ("projected saving", f"{self.projected_saving:.1%}")])]

    def _repr_fields(self) -> dict:
        return {"rung": "finished" if self.rung is None else str(self.rung),
                "actions": len(self.actions), "projected_saving": self.projected_saving}


def plan_next(sweep: Sweep, policy: Policy, budget: float, *, eta: int = 3,
              min_resource: float | None = None, seed: int = 0,
              reached: Mapping[str, float] | None = None) -> Plan:
    """Plan the next actions for the runs of ``sweep`` (partial curves) under ``budget``.

    ``reached`` gives the resource each run has been trained to (default: its
    last logged point); an advance is done when the run has reached its stop.
    """
    runs = sweep.runs
    reached = dict(reached or {r: (float(c.resource[-1]) if len(c) else 0.0)
                               for r, c in sweep.curves.items()})
    loop, bracket = allocation_loop(sweep, policy, budget, runs=runs, eta=eta,
                                    min_resource=min_resource, seed=seed)
    planned = (float(budget) if bracket is None else
               min(float(budget), sum(planned_cost(sweep, runs, bracket))))
    generator = loop.steps()
    spent = 0.0
    try:
        batch = next(generator)
        while True:
            pending = [a for a in batch if reached.get(a.run, 0.0) < a.stop * (1 - 1e-9)]
            if pending:
                break
            spent += sum(a.cost for a in batch)
            batch = generator.send({a.run: sweep.curves[a.run].until(a.stop, a.start)
                                    for a in batch})
    except StopIteration:
        return Plan(bracket, None, [], spent, planned, sweep.total_compute(),
                    loop.state.promotions, list(getattr(loop, "decisions", [])))
    generator.close()
    spent += sum(a.cost for a in batch if a not in pending)
    decisions = list(getattr(loop, "decisions", []))
    promotions = ([list(d["runs"]) for d in decisions] if bracket is None
                  else loop.state.promotions)
    before = promotions[-2] if len(promotions) > 1 else runs
    dropped = ([run for run in before if run not in loop.active] if promotions
               and bracket is not None else [])
    actions = [_continue(sweep, a, reached.get(a.run, 0.0)) for a in pending]
    actions += [{"run": run, "action": "stop", "at": reached.get(run, 0.0)} for run in dropped]
    return Plan(bracket, pending[0].rung, actions, spent, planned, sweep.total_compute(),
                [list(p) for p in promotions], decisions)


def _continue(sweep: Sweep, advance: Advance, reached: float) -> dict:
    """The advance from where the run is (it may have been trained past the last rung)."""
    start = max(float(advance.start), reached)
    return {"run": advance.run, "action": "continue", "from": start, "to": float(advance.stop),
            "flops": float(np.round(sweep.cost(advance.run, start, advance.stop), 6))}
