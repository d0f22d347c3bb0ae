"""``scalekit allocate``: spend a compute budget on a sweep with Successive Halving.

Three modes: ``--replay`` simulates the policies on complete curves at several
budgets and seeds, ``--plan`` prints the next actions for partial curves, and
``--run TASK`` trains the candidates of a trainer through the allocation,
writing points into the store and resuming after a kill.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import (on_interrupt, open_frame, parse_mapping, print_renderable, quiet_option,
                     store_option)

MODES = ("replay", "plan", "run")


def allocate(
    budget: list[str] = typer.Option(..., "--budget", help="Compute budget: FLOPs (1e18, 3.2e17) "
                                     "or PF-days (1.5PF-days); in --replay also a share of the "
                                     "exhaustive sweep (5%). Repeat to replay several budgets."),
    curves: Optional[Path] = typer.Option(None, "--curves", help="Curves file (CSV, JSONL, "
                                          "Parquet, W&B CSV, TensorBoard dir)."),
    store: Optional[Path] = store_option(default=None),
    policy: Optional[str] = typer.Option(None, "--policy", help="loss (plain SH), forecast, "
                                         "frontier or (--replay only) uniform; --replay "
                                         "compares all when omitted, --plan/--run default to "
                                         "forecast."),
    eta: int = typer.Option(3, "--eta", help="Reduction factor of Successive Halving."),
    min_resource: Optional[float] = typer.Option(None, "--min-resource", help="Resource of the "
                                                 "first rung (default: fitted to the budget)."),
    max_resource: Optional[float] = typer.Option(None, "--max-resource", help="--plan: resource "
                                                 "at which every run ends (default: its last "
                                                 "point)."),
    resource: str = typer.Option("compute", "--resource", help="Resource axis: compute, step or "
                                 "tokens."),
    surrogate: str = typer.Option("joint", "--surrogate", help="Surrogate of the forecast "
                                  "and frontier policies: joint, ensemble or gp."),
    replay_mode: bool = typer.Option(False, "--replay", help="Simulate policies on complete "
                                     "curves (the default)."),
    plan_mode: bool = typer.Option(False, "--plan", help="Print the next actions for partial "
                                   "curves."),
    run_task: Optional[str] = typer.Option(None, "--run", help="Train the candidates of TASK "
                                           "(synthetic, or a scalekit train task) into --store."),
    seeds: int = typer.Option(20, "--seeds", help="--replay: number of seeds."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random choice (first seed)."),
    candidates: Optional[int] = typer.Option(None, "--candidates", help="--replay: runs drawn "
                                             "per seed (default: all)."),
    group: Optional[str] = typer.Option(None, "--group", help="Columns whose values name a run, "
                                        "comma-separated (e.g. model,peak_lr,sweep)."),
    workers: int = typer.Option(1, "--workers", help="--run: parallel trainers (processes)."),
    mapping: list[str] = typer.Option([], "--map", help="Column role, as role=column "
                                      "(repeatable)."),
    duplicates: str = typer.Option("error", "--duplicates", help="A step a run logs twice in "
                                   "--curves: error, or keep the first or last one."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the JSON report here."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG/SVG figure here."),
    quiet: bool = quiet_option(),
) -> None:
    """Spend a compute budget on a sweep: Successive Halving guided by surrogate forecasts."""
    from scalekit.allocate.budget import parse_budget
    from scalekit.allocate.schedules import check_eta
    from scalekit.checks import check_choice, check_number
    from scalekit.errors import InputError

    chosen = [m for m, on in zip(MODES, (replay_mode, plan_mode, run_task is not None)) if on]
    if len(chosen) > 1:
        raise InputError("give one of --replay, --plan and --run")
    mode = chosen[0] if chosen else "replay"
    check_eta(eta)
    check_choice("resource", resource, ("compute", "step", "tokens"))
    if policy is not None:
        check_choice("policy", policy, ("loss", "forecast", "frontier", "uniform"))
    if min_resource is not None:
        check_number("min_resource", min_resource, low=0, low_open=True)
    check_number("seeds", seeds, low=1, integer=True)
    check_number("seed", seed, low=0, integer=True)  # numpy seeds are non-negative
    check_number("workers", workers, low=1, integer=True)
    check_choice("duplicates", duplicates, ("error", "first", "last"))
    budgets = [_budget(text, mode, parse_budget) for text in budget]
    if mode != "replay" and len(budgets) != 1:
        raise InputError(f"--{mode} takes one --budget")
    settings = dict(mode=mode, budgets=budget, policy=policy, eta=eta, min_resource=min_resource,
                    resource=resource, surrogate=surrogate, seeds=seeds, candidates=candidates,
                    group=group, max_resource=max_resource, duplicates=duplicates)
    if mode == "run":
        report, table = _run(run_task, store, budgets[0], policy or "forecast", eta,
                             min_resource, surrogate, seed, workers, quiet)
        digest = None
    else:
        sweep, digest = _sweep(curves, store, mapping, group, resource, max_resource,
                               duplicates)
        if mode == "replay":
            report, table = _replay(sweep, budgets, policy, eta, min_resource, surrogate,
                                    seeds, seed, candidates, plot)
        else:
            report, table = _plan(sweep, budgets[0], policy or "forecast", eta, min_resource,
                                  surrogate, seed)
    from scalekit import serialise

    report["compute_convention"] = ("counted: the compute column as logged, or 6·N·D where "
                                    "only params and tokens were given")
    if json_out is not None:
        serialise.write_report(json_out, "allocate", report, input_sha256=digest,
                               seed=seed, settings=settings)
    if not quiet:
        print_renderable(table)


def _budget(text: str, mode: str, parse_budget) -> float:
    from scalekit.errors import InputError

    if text.strip().endswith("%"):
        if mode != "replay":
            raise InputError(f"The value of `budget` is {text!r}, but a share of the "
                             "exhaustive sweep only makes sense with --replay.")
        share = parse_budget(text.strip()[:-1]) / 100.0
        if share > 1:
            raise InputError(f"The value of `budget` is {text!r}, but must be <= 100%.")
        return share
    flops = parse_budget(text)
    if flops <= 1:
        raise InputError(f"The value of `budget` is {text!r}, but must be more than 1 FLOP "
                         "(write a share of the exhaustive sweep as 5%).")
    return flops


def _sweep(curves, store, mapping, group, resource, max_resource, duplicates):
    from scalekit.allocate.sweep import sweep_from_frame
    from scalekit.errors import InputError

    frame, digest = open_frame(curves, store, parse_mapping(mapping), duplicates=duplicates)
    if group:
        columns = [c.strip() for c in group.split(",") if c.strip()]
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"--group names columns the curves lack: {', '.join(missing)}")
        frame = frame.assign(run=frame[columns].astype(str).agg("/".join, axis=1))
    ends = None
    if max_resource is not None:
        ends = {str(run): float(max_resource) for run in frame["run"].unique()}
    return sweep_from_frame(frame, resource=resource, source=str(curves or store),
                            max_resource=ends), digest


def _policy_factory(surrogate):
    from scalekit.allocate.policies import get_policy

    return lambda name, seed: get_policy(name, surrogate=surrogate, seed=seed)


def _replay(sweep, budgets, policy, eta, min_resource, surrogate, seeds, seed, candidates, plot):
    from rich.table import Table

    from scalekit.allocate.replay import replay
    from scalekit.allocate.schedules import format_rung_table

    # uniform and budget-matched plain SH (loss) are the two baselines every policy is read against
    wanted = ["uniform", "loss", "forecast", "frontier"] if policy is None else (
        list(dict.fromkeys(["uniform", "loss", policy])))
    result = replay(sweep, policies=wanted + ["exhaustive"], budgets=budgets,
                    seeds=list(range(seed, seed + seeds)), eta=eta, min_resource=min_resource,
                    n_candidates=candidates, policy_factory=_policy_factory(surrogate),
                    completion=surrogate)
    table = Table(title=f"replay over {seeds} seeds; exhaustive sweep "
                        f"{result.exhaustive_compute:.3g} FLOPs")
    for column in ("budget", "policy", "best loss", "vs uniform", "vs plain SH", "compute used",
                   "law error @max", "law error @10x", "completed @max", "all completed @max"):
        table.add_column(column, justify="right")
    for row in result.averages.itertuples():
        table.add_row(_share(row.budget), row.policy, f"{row.best_loss:.4f}",
                      f"{row.improvement_vs_uniform:+.2%}", f"{row.improvement_vs_sh:+.2%}",
                      f"{row.compute_fraction:.2%}",
                      _pct(row.frontier_error_at_max), _pct(row.frontier_error_at_10x),
                      _pct(row.completed_frontier_error_at_max),
                      _pct(row.all_completed_frontier_error_at_max))
    brackets = {b: pair[1] for (b, name), pair in result.examples.items() if pair[1] is not None}
    rung_tables = {_share(b): format_rung_table(br, unit=sweep.resource_name)
                   for b, br in brackets.items()}
    if plot is not None:
        from scalekit.report.allocate_plots import plot_allocations

        last = budgets[-1]
        plot_allocations(result.example_sweep,
                         {name: pair for (b, name), pair in result.examples.items() if b == last},
                         plot, rung_policy="forecast", title=f"budget {_share(last)}, first seed")
    report = {"mode": "replay", "exhaustive_flops": result.exhaustive_compute,
              "summary": result.averages.to_dict(orient="records"),
              "rows": result.rows.to_dict(orient="records"),
              "rung_tables": rung_tables, "warnings": []}
    from rich.console import Group
    from rich.text import Text

    shown = [Text(f"rungs at budget {b}:\n{t}") for b, t in rung_tables.items()][:1]
    return report, Group(*shown, table)


def _plan(sweep, budget, policy, eta, min_resource, surrogate, seed):
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from scalekit.allocate.next_actions import plan_next
    from scalekit.allocate.policies import get_policy
    from scalekit.allocate.schedules import format_rung_table

    plan = plan_next(sweep, get_policy(policy, surrogate=surrogate, seed=seed), budget,
                     eta=eta, min_resource=min_resource, seed=seed)
    step = ("finished: every rung is trained, nothing left to do" if plan.rung is None
            else f"next actions (rung {plan.rung})")
    table = Table(title=f"{step}; projected saving {plan.projected_saving:.1%} of the "
                        "exhaustive sweep")
    for column in ("run", "action", "from", "to", "FLOPs"):
        table.add_column(column, justify="right")
    for action in plan.actions:
        table.add_row(escape(action["run"]), action["action"],
                      f"{action.get('from', action.get('at')):.4g}",
                      f"{action['to']:.4g}" if "to" in action else "",
                      f"{action['flops']:.3g}" if "flops" in action else "")
    rungs = Text(format_rung_table(plan.bracket, unit=sweep.resource_name))
    return {"mode": "plan", **plan.to_dict(), "warnings": []}, Group(rungs, table)


def _trainer(task: str, *, seed: int, store: Path):
    """The trainer behind ``--run TASK``: ``synthetic`` (pure Python) or a bundled torch task."""
    from scalekit.checks import check_choice
    from scalekit.train.tasks import available_tasks

    check_choice("task", task, ("synthetic", *available_tasks()))
    if task == "synthetic":
        from scalekit.allocate.toy import SyntheticTrainer

        return SyntheticTrainer(seed=seed, sizes=9, variants=3, max_compute=1e18, points=40)
    from scalekit.train.allocation_trainer import task_trainer

    return task_trainer(task, seed=seed, store=store)


def _run(task, store, budget, policy, eta, min_resource, surrogate, seed, workers, quiet):
    from rich.text import Text

    from scalekit.allocate.policies import get_policy
    from scalekit.allocate.replay import fit_bracket
    from scalekit.allocate.runner import candidate_sweep, run_allocation
    from scalekit.allocate.schedules import format_rung_table
    from scalekit.errors import InputError

    if store is None:
        raise InputError("--run writes into a store: give --store DB")
    trainer = _trainer(task, seed=seed, store=store)
    sweep = candidate_sweep(trainer)
    bracket = fit_bracket(sweep, sweep.runs, budget, eta=eta, min_resource=min_resource)
    if not quiet:  # the rung table comes before any training
        print_renderable(Text(format_rung_table(bracket, unit=trainer.resource)))
    on_interrupt(lambda: f"the store {store} keeps {_finished(store, task)} of task {task!r}; "
                 "run the same command again to resume")
    result = run_allocation(store, task, trainer,
                            get_policy(policy, surrogate=surrogate, seed=seed), budget=budget, eta=eta, min_resource=min_resource, seed=seed,
                            workers=workers, settings={"surrogate": surrogate})
    allocation = result.allocation
    best = min(((float(c.loss[-1]), r) for r, c in allocation.observed.items() if len(c)),
               default=(None, None))
    text = "".join(f"--{note}\n" for note in result.notes) + (
        f"task {task!r}: {result.trained} advances trained now, {result.reused} read back "
        f"from the store; spent {allocation.spent:.4g} of {budget:.4g} FLOPs; " + (
                f"best run {best[1]} (loss {best[0]:.4f})" if best[1] is not None else
                "no run has logged a point yet (the budget ends before the first one)"))
    report = {"mode": "run", "task": task, "spent_flops": allocation.spent,
              "budget_flops": budget, "promotions": allocation.promotions,
              "best_run": best[1], "best_loss": best[0],
              "rungs": [{"rung": r.index, "runs": r.runs, "resource": r.resource}
                        for r in result.bracket.rungs], "warnings": []}
    return report, Text(text)


def _finished(store, task) -> str:
    from scalekit.allocate.state import AllocationState

    if not Path(store).is_file():
        return "no finished advance"
    with AllocationState(store) as state:
        done = sum(e["status"] == "done" for e in state.ledger(task).values())
    return f"{done} finished advance{'s' * (done != 1)}"


def _share(budget: float) -> str:
    return f"{budget:.1%}" if budget <= 1 else f"{budget:.3g}"


def _pct(value: float) -> str:
    return "n/a" if value != value else f"{value:.2%}"


def register(app: typer.Typer) -> None:
    """Add the ``allocate`` command to ``app``."""
    app.command("allocate")(allocate)
