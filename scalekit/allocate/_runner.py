"""Drive trainers through an allocation (``run`` mode), resumably: the ``commit`` allocator
or Successive Halving.

A trainer is any object with

- ``resource``: the axis it advances on (``"step"``, ``"tokens"`` or ``"compute"``);
- ``candidates() -> DataFrame``: one row per run with ``run``, ``params``,
  ``max_resource`` and ``flops_per_unit`` (FLOPs per unit of resource);
- ``advance(run, start, stop) -> DataFrame``: train ``run`` from ``start`` to
  ``stop`` and return the points logged on the way (``step``, ``compute``,
  the metric, optionally ``tokens``), resuming from its own checkpoint or from
  scratch as it likes, but returning the same points either way.

Advances of one rung go through a :class:`concurrent.futures.Executor`; each
run's points are written to the curve store as its future completes (for the
in-process executor: as each advance returns, before the next one starts). Every
advance is recorded in the allocation ledger before it starts and marked done
once its points are in the store, and every promotion is recorded when made
(:mod:`scalekit.allocate._state`). Running the same task again after a kill
replays the loop from the start: finished advances are answered from the store,
recorded promotions are reused, and only the unfinished advances are trained.
"""

from __future__ import annotations

from concurrent.futures import Executor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.allocate._commit import CommitLoop, CommitPolicy
from scalekit.allocate._engine import Allocation, Advance, HalvingLoop, drive
from scalekit.allocate._policies import Policy
from scalekit.allocate._replay import fit_bracket
from scalekit.allocate._schedules import SuccessiveHalving
from scalekit.executors import InlineExecutor, process_pool, running, worker_count
from scalekit.allocate._state import AllocationState
from scalekit.allocate._sweep import RESOURCES, Curve, Sweep
from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError
from scalekit.formatting import format_number
from scalekit.progress import track
from scalekit.results import ResultProtocol


@dataclass
class RecordedPolicy:
    """Wraps a policy so that each rung's promotion is made once and then read back."""

    policy: Policy
    state: AllocationState
    task: str

    @property
    def name(self) -> str:
        return self.policy.name

    def select(self, observed, keep, context):
        runs = self.state.promotion(self.task, context.rung)
        if runs is None:
            runs = list(self.policy.select(observed, keep, context))
            self.state.record_promotion(self.task, context.rung, runs)
        return runs


@dataclass(repr=False)
class AllocationRunResult(ResultProtocol):
    """Outcome of :func:`run_allocation`: the allocation, its bracket (None for ``commit``),
    how much was trained now, and the ``commit`` allocator's decisions (one per phase)."""

    allocation: Allocation
    bracket: SuccessiveHalving | None
    trained: int
    reused: int
    decisions: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"allocation": self.allocation.to_dict(),
                "bracket": None if self.bracket is None else asdict(self.bracket),
                "trained": self.trained, "reused": self.reused,
                "decisions": [dict(d) for d in self.decisions]}

    @classmethod
    def from_dict(cls, data: dict) -> AllocationRunResult:
        bracket = data.get("bracket")
        return cls(Allocation.from_dict(data["allocation"]),
                   None if bracket is None else SuccessiveHalving(**bracket),
                   int(data["trained"]), int(data["reused"]),
                   [dict(d) for d in data.get("decisions", [])])

    def to_frame(self):
        """The steps: for ``commit`` one row per decision (``phase``, ``action``, ``runs``,
        ``why``), for Successive Halving one row per rung (``rung``, ``runs``, ``resource``)."""
        import pandas as pd

        if self.bracket is None:
            return pd.DataFrame([{"phase": d.get("phase"), "action": d.get("action"),
                                  "runs": ", ".join(d.get("runs", [])), "why": d.get("why")}
                                 for d in self.decisions],
                                columns=["phase", "action", "runs", "why"])
        return pd.DataFrame([{"rung": r.index, "runs": r.runs, "resource": r.resource}
                             for r in self.bracket.rungs], columns=["rung", "runs", "resource"])

    def _summary_title(self) -> str:
        return ("Allocation run (commit: probe, fit, finish) over a trainer" if self.bracket is None
                else "Allocation run (Successive Halving over a trainer)")

    def _summary_sections(self):
        a = self.allocation
        steps = ([(f"phase {d['phase']}", f"{d['action']} {', '.join(d['runs'])}: {d['why']}")
                  for d in self.decisions] if self.bracket is None else
                 [(f"rung {r.index}", f"{r.runs} runs to {format_number(r.resource)}")
                  for r in self.bracket.rungs])
        return [("Budget", [("budget (FLOPs)", a.budget), ("spent (FLOPs)", a.spent),
                            ("budget exhausted", a.exhausted)]
                 + ([("left unspent because", a.unspent_reason)] if a.unspent_reason else [])),
                ("Decisions" if self.bracket is None else "Bracket", steps),
                ("This invocation", [("advances trained", self.trained),
                                     ("advances reused", self.reused)]),
                ("Promotions", [f"rung {i}: " + ", ".join(runs)
                                for i, runs in enumerate(a.promotions)])]

    def _repr_fields(self) -> dict:
        return {"spent": self.allocation.spent, "budget": self.allocation.budget,
                "runs": len(self.allocation.observed), "trained": self.trained}
    workers: int = 1
    notes: list[str] = field(default_factory=list)


def advance_trainer(trainer, run: str, start: float, stop: float):
    """``trainer.advance(run, start, stop)``: a plain function, which every executor can send
    (Ray's tasks take functions, not bound methods); the points come back to the caller."""
    return trainer.advance(run, start, stop)


def candidate_sweep(trainer) -> Sweep:
    """The cost model of the trainer's candidates (no points yet)."""
    resource = check_choice("resource", getattr(trainer, "resource", "step"), RESOURCES)
    frame = pd.DataFrame(trainer.candidates())
    missing = {"run", "max_resource", "flops_per_unit"} - set(frame.columns)
    if missing:
        raise InputError(f"the trainer's candidates lack {', '.join(sorted(missing))}")
    if frame["run"].duplicated().any():
        raise InputError("the trainer's candidates repeat a run name", column="run")
    empty = Curve(np.empty(0), np.empty(0), np.empty(0))
    runs = frame["run"].astype(str).tolist()
    for column in ("max_resource", "flops_per_unit"):
        for run, value in zip(runs, frame[column], strict=True):
            check_number(f"{column} of {run}", float(value), low=0, low_open=True)
    params = frame["params"] if "params" in frame else pd.Series(np.nan, index=frame.index)
    return Sweep(resource, {r: empty for r in runs},
                 dict(zip(runs, frame["max_resource"].astype(float), strict=True)),
                 dict(zip(runs, frame["flops_per_unit"].astype(float), strict=True)),
                 dict(zip(runs, params.astype(float), strict=True)))


def run_allocation(store_path: str | Path, task: str, trainer, policy: Policy, *,
                   budget: float, eta: int = 3, min_resource: float | None = None,
                   seed: int = 0, executor: Executor | None = None, workers: int = 1,
                   metric: str = "loss", settings: dict | None = None) -> AllocationRunResult:
    """Allocate ``budget`` FLOPs over the trainer's candidates, writing points to the store.

    ``task`` names the allocation in the store; calling again with the same
    task and settings resumes it. ``settings`` are extra settings recorded with
    the task (e.g. the trainer's own), checked on resume. Advances run on
    ``executor``, or else on ``workers`` spawned processes (capped at the first
    rung's runs and the CPUs; one runs them in this process).
    """
    check_number("budget", budget, low=0, low_open=True)
    check_number("workers", workers, low=1, integer=True)
    sweep = candidate_sweep(trainer)
    bracket = (None if isinstance(policy, CommitPolicy) else
               fit_bracket(sweep, sweep.runs, budget, eta=eta, min_resource=min_resource))
    shared = dict(budget=budget, eta=eta, min_resource=min_resource, seed=seed, metric=metric,
                  settings=settings)
    if executor is not None:
        return _allocate(store_path, task, trainer, policy, sweep, bracket, executor=executor,
                         **shared)
    workers, note = worker_count(workers, len(sweep.runs) if bracket is None
                                 else bracket.rungs[0].runs)
    with running(process_pool(workers) if workers > 1 else InlineExecutor()) as pool:
        result = _allocate(store_path, task, trainer, policy, sweep, bracket, executor=pool,
                           **shared)
    result.workers, result.notes = workers, [f"workers: {note}"] if note else []
    return result


def _allocate(store_path, task, trainer, policy, sweep, bracket, *, budget, eta, min_resource,
              seed, executor, metric, settings) -> AllocationRunResult:
    from scalekit.curves import CurveStore

    recorded = dict(settings or {}, budget=float(budget), policy=policy.name, eta=eta,
                    min_resource=min_resource, seed=seed, resource=sweep.resource_name,
                    runs=sweep.runs)
    with CurveStore(store_path) as store, AllocationState(store_path) as state, \
            state.locked(task):
        state.start_task(task, recorded)
        for run in sweep.runs:
            store.add_run(run, source=f"allocate:{task}",
                          attrs={"params": sweep.params.get(run)} if np.isfinite(
                              sweep.params.get(run, np.nan)) else None)
        # commit decides from the points alone (no ties drawn), so a rerun decides the same
        loop = (CommitLoop(sweep, policy, budget, seed=seed) if bracket is None else
                HalvingLoop(sweep, bracket, RecordedPolicy(policy, state, task), budget,
                            seed=seed))
        counts = {"trained": 0, "reused": 0}

        def stored(advance: Advance) -> pd.DataFrame:
            frame = store.curves(runs=[advance.run], metric=metric).frame
            if frame.empty:
                return frame
            axis = frame[sweep.resource_name].to_numpy(float)
            return frame[(axis > advance.start) & (axis <= advance.stop * (1 + 1e-12))]

        def as_curve(points: pd.DataFrame) -> Curve:
            if points.empty:
                return Curve(np.empty(0), np.empty(0), np.empty(0))
            points = points.sort_values(sweep.resource_name)
            return Curve(points[sweep.resource_name].to_numpy(float),
                         points["compute"].to_numpy(float), points[metric].to_numpy(float))

        def finish(future, advance: Advance) -> BaseException | None:
            """Store a finished advance's points and mark it done (its error, if any)."""
            if future.exception() is not None:
                return future.exception()
            points = pd.DataFrame(future.result())
            if len(points):
                store.append_points(advance.run, points)
            state.mark_done(task, advance)
            counts["trained"] += 1
            return None

        def execute(batch: list[Advance]) -> dict[str, Curve]:
            ledger = state.ledger(task)
            pending, failures = {}, []
            for advance in track(batch, f"rung {batch[0].rung}" if batch else "rung"):
                entry = ledger.get((advance.rung, advance.run))
                if entry is not None and (entry["status"] == "done" or len(stored(advance))):
                    if entry["status"] != "done":
                        state.mark_done(task, advance)
                    counts["reused"] += 1
                    continue
                state.reserve(task, advance)
                pending[executor.submit(advance_trainer, trainer, advance.run, advance.start,
                                        advance.stop)] = advance
                # an advance is recorded as soon as it has finished (at once in this
                # process), so that a kill later in the rung loses none of it
                for future in [f for f in pending if f.done()]:
                    failures.append(finish(future, pending.pop(future)))
            for future in as_completed(pending):
                failures.append(finish(future, pending[future]))
            failure = next((f for f in failures if f is not None), None)
            if failure is not None:  # the others' points are kept
                raise failure
            return {advance.run: as_curve(stored(advance)) for advance in batch}

        allocation = drive(loop.steps(), execute)
        for decision in getattr(loop, "decisions", []):  # commit's choices, for the record
            state.record_promotion(task, decision["phase"], decision["runs"])
    return AllocationRunResult(allocation, bracket, counts["trained"], counts["reused"],
                               list(getattr(loop, "decisions", [])))
