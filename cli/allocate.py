"""``scalekit allocate replay|plan|run``: spend a compute budget on a sweep with Successive
Halving.

``replay`` simulates the policies on complete curves at several budgets and
seeds, ``plan`` prints the next actions for partial curves, and ``run TASK``
trains the candidates of a trainer through the allocation, writing points into
the store and resuming after a kill. The options they share are declared once
below. The flags ``--replay``, ``--plan`` and ``--run TASK`` of earlier
releases are aliases of the subcommands for one release (:func:`legacy_args`).
"""

from __future__ import annotations

from pathlib import Path

import typer

from .options import html_option, map_option, seed_option
from .common import (check_executor, checked_inputs, choice_argument, choice_option, display,
                     format_option, job_executor, json_option,
                     library_choices, on_interrupt, open_curves, parse_mapping, plot_option,
                     print_renderable, print_tables, quiet_option, slurm_options, store_option)

MODES = ("replay", "plan", "run")
allocate_app = typer.Typer(name="allocate", no_args_is_help=True,
                           help="Spend a compute budget on a sweep: by default probe cheap "
                                "runs, fit L(N, D) and finish what the budget affords "
                                "(--policy commit); Successive Halving by loss, forecast or "
                                "frontier on request (replay, plan or run).")


def _positive(flag: str):
    def check(value: float | None) -> float | None:
        from scalekit.checks import check_number

        return None if value is None else check_number(flag, value, low=0, low_open=True)

    return check


def _at_least(flag: str, low: int):
    def check(value: int | None) -> int | None:
        from scalekit.checks import check_number

        return None if value is None else check_number(flag, value, low=low, integer=True)

    return check


def _eta(value: int) -> int:
    from scalekit.allocate import check_eta
    from scalekit.checks import fail

    try:
        return check_eta(value)
    except Exception:  # the library names the parameter; the CLI names the flag
        raise fail("--eta", value, "an integer > 1") from None


def _tasks() -> tuple[str, ...]:
    from scalekit.train import available_tasks

    return ("synthetic", *available_tasks())


# -- options shared by the subcommands, declared once --------------------------------------
_BUDGET_HELP = ("Compute budget: FLOPs (1e18, 3.2e17) or PF-days (1.5PF-days)")
_BUDGETS = typer.Option(..., "--budget", help=_BUDGET_HELP + "; also a share of the exhaustive "
                        "sweep (5%). Repeat to replay several budgets.")
_BUDGET = typer.Option(..., "--budget", help=_BUDGET_HELP + ".")
_CURVES = typer.Option(None, "--curves", callback=checked_inputs, is_eager=True,
                       help="Curves file (CSV, JSONL, Parquet, W&B CSV, "
                            "TensorBoard dir).")
_STORE = store_option(default=None)
_POLICY_HELP = ("commit (default: probe cheap runs, fit L(N, D), finish what the budget "
                "affords), loss (plain SH), forecast or frontier")
_POLICIES = ("scalekit.allocate", "ALLOCATION_POLICIES")
_ETA = typer.Option(3, "--eta", callback=_eta, help="Reduction factor of Successive Halving.")
_MIN_RESOURCE = typer.Option(None, "--min-resource", callback=_positive("--min-resource"),
                             help="Resource of the first rung (default: fitted to the budget).")
_RESOURCE = choice_option("compute", "--resource",
                          library_choices("scalekit.allocate", "RESOURCES"),
                          "Resource axis: compute, step or tokens.")
_SURROGATE = choice_option("joint", "--surrogate",
                           library_choices("scalekit.allocate", "SURROGATES"),
                           "Surrogate of the forecast and frontier policies: joint, ensemble "
                           "or gp.")
_SEED = seed_option()
_SLURM = slurm_options()
_GROUP = typer.Option(None, "--group", help="Columns whose values name a run, comma-separated "
                      "(e.g. model,peak_lr,sweep).")
_MAP = map_option()
_DUPLICATES = choice_option("error", "--duplicates",
                            library_choices("scalekit.curves", "DUPLICATES"),
                            "A step a run logs twice in --curves: error, or keep the first or "
                            "last one.")
_JSON = json_option()
_QUIET = quiet_option()
_FORMAT = format_option()


@allocate_app.command("replay")
def replay_command(
    budget: list[str] = _BUDGETS, curves: Path | None = _CURVES,
    store: Path | None = _STORE,
    policy: str | None = choice_option(None, "--policy",
                                          library_choices(*_POLICIES, "uniform"),
                                          _POLICY_HELP + " or uniform; all are compared when "
                                          "omitted."),
    eta: int = _ETA, min_resource: float | None = _MIN_RESOURCE, resource: str = _RESOURCE,
    surrogate: str = _SURROGATE,
    seeds: int = typer.Option(20, "--seeds", callback=_at_least("--seeds", 1),
                              help="Number of seeds."),
    seed: int = _SEED,
    candidates: int | None = typer.Option(None, "--candidates",
                                             callback=_at_least("--candidates", 1),
                                             help="Runs drawn per seed (default: all)."),
    frontier_min_compute: float | None = typer.Option(
        None, "--frontier-min-compute", callback=_positive("--frontier-min-compute"),
        help="Fit every frontier law to the frontier points at this many FLOPs or more "
        "(leave the warm-up out)."),
    group: str | None = _GROUP, mapping: list[str] = _MAP, duplicates: str = _DUPLICATES,
    json_out: Path | None = _JSON, plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = _QUIET, fmt: str = _FORMAT,
) -> None:
    """Simulate the policies on complete curves at several budgets and seeds."""
    from scalekit.allocate import parse_budget

    budgets = [_budget(text, "replay", parse_budget) for text in budget]
    sweep, digest = _sweep(curves, store, mapping, group, resource, None, duplicates)
    report, shown = _replay(sweep, budgets, policy, eta, min_resource, surrogate, seeds, seed,
                            candidates, plot, frontier_min_compute or 0.0)
    settings = dict(budgets=budget, policy=policy, eta=eta, min_resource=min_resource,
                    resource=resource, surrogate=surrogate, seeds=seeds, candidates=candidates,
                    group=group, duplicates=duplicates,
                    frontier_min_compute=frontier_min_compute)
    _render("replay", report, shown, fmt, json_out, quiet, digest, seed, settings)
    if html is not None:
        from scalekit.allocate import ReplayResult

        from .report import replay_page, write_page

        write_page(html, replay_page(ReplayResult.from_dict(report), report, settings))


@allocate_app.command("plan")
def plan_command(
    budget: str = _BUDGET, curves: Path | None = _CURVES, store: Path | None = _STORE,
    policy: str = choice_option("commit", "--policy", library_choices(*_POLICIES),
                                _POLICY_HELP + "."),
    eta: int = _ETA, min_resource: float | None = _MIN_RESOURCE,
    max_resource: float | None = typer.Option(None, "--max-resource",
                                                 callback=_positive("--max-resource"),
                                                 help="Resource at which every run ends "
                                                 "(default: its last point)."),
    resource: str = _RESOURCE, surrogate: str = _SURROGATE, seed: int = _SEED,
    group: str | None = _GROUP, mapping: list[str] = _MAP, duplicates: str = _DUPLICATES,
    json_out: Path | None = _JSON, quiet: bool = _QUIET, fmt: str = _FORMAT,
    html: Path | None = html_option(),
) -> None:
    """Print the next actions for partial curves."""
    from scalekit.allocate import parse_budget

    flops = _budget(budget, "plan", parse_budget)
    sweep, digest = _sweep(curves, store, mapping, group, resource, max_resource, duplicates)
    report, shown = _plan(sweep, flops, policy, eta, min_resource, surrogate, seed)
    settings = dict(budgets=[budget], policy=policy, eta=eta, min_resource=min_resource,
                    max_resource=max_resource, resource=resource, surrogate=surrogate,
                    group=group, duplicates=duplicates)
    _render("plan", report, shown, fmt, json_out, quiet, digest, seed, settings)
    if html is not None:
        from scalekit.allocate import Plan

        from .report import result_page, write_page

        plan = Plan.from_dict(report)
        write_page(html, result_page(plan, report, settings, table=plan.to_frame()))


@allocate_app.command("run")
def run_command(
    task: str = choice_argument("task", _tasks, "synthetic, or a scalekit train task."),
    budget: str = _BUDGET,
    store: Path = store_option(default=None, writes=True),
    policy: str = choice_option("commit", "--policy", library_choices(*_POLICIES),
                                _POLICY_HELP + "."),
    eta: int = _ETA, min_resource: float | None = _MIN_RESOURCE,
    surrogate: str = _SURROGATE, seed: int = _SEED,
    workers: int = typer.Option(1, "--workers", callback=_at_least("--workers", 1),
                                help="Parallel trainers (processes; at most the first rung's "
                                "runs and the CPUs)."),
    executor: str = choice_option("local", "--executor",
                                  library_choices("scalekit.executors", "EXECUTORS"),
                                  "local (processes), ray (the trainer calls on a Ray "
                                  "cluster), slurm (each advance a Slurm job through "
                                  "submitit) or submitit-local (the same jobs as processes "
                                  "here); this process alone writes the store."),
    ray_address: str | None = typer.Option(None, "--ray-address",
                                              help="Ray cluster to join (default: a local one)."),
    slurm_partition: str | None = _SLURM["partition"], slurm_time: str = _SLURM["time"],
    slurm_gpus: int | None = _SLURM["gpus"], jobs_folder: Path | None = _SLURM["folder"],
    hparams: Path | None = typer.Option(None, "--hparams", help="A learning-rate fit (scalekit "
                                           "law hparams --json): each width's variants are "
                                           "its lr_variants at the width's N and D, not two "
                                           "seeds (a torch task)."),
    json_out: Path | None = _JSON, quiet: bool = _QUIET,
    html: Path | None = html_option(),
) -> None:
    """Train the candidates of TASK through the allocation into --store (resumable)."""
    from scalekit.allocate import parse_budget
    from scalekit.errors import InputError

    check_executor(executor, ray_address)
    if store is None:
        raise InputError("allocate run writes into a store: give --store DB")
    flops = _budget(budget, "run", parse_budget)
    jobs = dict(partition=slurm_partition, time=slurm_time, gpus=slurm_gpus, folder=jobs_folder,
                ray_address=ray_address)
    report, shown, result = _run(task, store, flops, policy, eta, min_resource, surrogate,
                                 seed, workers, quiet, executor, jobs, hparams)
    settings = dict(budgets=[budget], policy=policy, eta=eta, min_resource=min_resource,
                    surrogate=surrogate, task=task, workers=workers, executor=executor,
                    hparams=None if hparams is None else str(hparams))
    _render("run", report, shown, "table", json_out, quiet, None, seed, settings)
    if html is not None:
        from .report import result_page, write_page

        table = None if result.bracket is None else result.to_frame()
        write_page(html, result_page(result, report, settings, table=table))


def _render(mode, report, shown, fmt, json_out, quiet, digest, seed, settings) -> None:
    """Write the JSON report and print ``shown`` (header lines and tables as data) in ``fmt``."""
    from scalekit import serialise

    report["compute_convention"] = ("counted: the compute column as logged, or 6·N·D where "
                                    "only params and tokens were given")
    if json_out is not None:
        serialise.write_report(json_out, "allocate", report, input_sha256=digest,
                               seed=seed, settings=dict(mode=mode, **settings))
    if not quiet:
        header, tables = shown
        print_tables(tables, fmt, header=header)


def legacy_args(args: list[str]) -> tuple[list[str], str | None]:
    """``allocate --replay|--plan|--run TASK ...`` (earlier releases) as the subcommand it
    stands for, with the deprecation note to print; other arguments are returned as they are."""
    from scalekit.errors import InputError

    if not args or args[0] != "allocate" or (len(args) > 1 and (
            args[1] in MODES or args[1] in ("-h", "--help"))):
        return args, None
    if len(args) == 1:
        return args, None
    rest, modes, task = [], [], []
    words = iter(args[1:])
    for word in words:
        if word in ("--replay", "--plan"):
            modes.append(word[2:])
        elif word == "--run" or word.startswith("--run="):
            modes.append("run")
            task.append(word[6:] if "=" in word else next(words, ""))
        else:
            rest.append(word)
    if len(modes) > 1:
        raise InputError("give one of --replay, --plan and --run (better: the subcommands "
                         "allocate replay, plan and run)")
    mode = modes[0] if modes else "replay"
    old = f"allocate --{mode}" + (" TASK" if mode == "run" else "")
    note = (f"note: `scalekit {old}` is now `scalekit allocate {mode}"
            + (" TASK" if mode == "run" else "") + "`; the old flags go in the next release")
    return ["allocate", mode, *task, *rest], note


def _budget(text: str, mode: str, parse_budget) -> float:
    """The budget ``text`` of ``mode`` in FLOPs, or a share of the sweep (replay); the
    library's errors name `budget`, which the CLI writes as `--budget`."""
    from scalekit.errors import InputError

    if text.strip().endswith("%"):
        if mode != "replay":
            raise InputError(f"The value of `--budget` is {text!r}, but a share of the "
                             "exhaustive sweep only makes sense with allocate replay.")
        share = parse_budget(text.strip()[:-1]) / 100.0
        if not 0 < share <= 1:
            raise InputError(f"The value of `--budget` is {text!r}, but must be in (0%, 100%].")
        return share
    flops = parse_budget(text)
    if flops <= 1:
        raise InputError(f"The value of `--budget` is {text!r}, but must be more than 1 FLOP "
                         "(write a share of the exhaustive sweep as 5%).")
    return flops


def _sweep(curves, store, mapping, group, resource, max_resource, duplicates):
    from scalekit.allocate import sweep_from_frame
    from scalekit.errors import InputError

    read, digest = open_curves(curves, store, parse_mapping(mapping), duplicates=duplicates)
    frame = read.frame
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
    from scalekit.allocate import get_policy

    return lambda name, seed: get_policy(name, surrogate=surrogate, seed=seed)


def _replay(sweep, budgets, policy, eta, min_resource, surrogate, seeds, seed, candidates, plot,
            frontier_min_compute=0.0):
    from scalekit.allocate import ALLOCATION_POLICIES, BASELINES
    from scalekit.allocate import replay
    from scalekit.allocate import format_rung_table
    from scalekit.formatting import format_number
    from scalekit.report import table_data

    # uniform, budget-matched plain SH (loss) and the rules a reviewer would try (finish the
    # largest run the budget can; SH, then finish its survivor) are what every policy is read against
    wanted = ["uniform", *ALLOCATION_POLICIES, *BASELINES] if policy is None else (
        list(dict.fromkeys(["uniform", "loss", *BASELINES, policy])))
    result = replay(sweep, policies=wanted + ["exhaustive"], budgets=budgets,
                    seeds=list(range(seed, seed + seeds)), eta=eta, min_resource=min_resource,
                    n_candidates=candidates, policy_factory=_policy_factory(surrogate),
                    completion=surrogate, frontier_min_compute=frontier_min_compute)
    table = table_data(
        f"replay over {seeds} seeds; exhaustive sweep {format_number(result.exhaustive_compute)} "
        "FLOPs; shares as fractions", ["policy", "budget", "best loss", "regret",
                                       "compute regret", "vs uniform",
                                       "vs plain SH", "compute used", "law error @max",
                                       "law error @10x", "reference miss", "completed @max",
                                       "all completed @max", "forecast in 80%",
                                       "forecast in 95%"],
        [[row.policy, row.budget, row.best_loss, row.regret, row.compute_regret,
          row.improvement_vs_uniform,
          row.improvement_vs_sh, row.compute_fraction, row.frontier_error_at_max,
          row.frontier_error_at_10x, row.reference_miss_at_max,
          row.completed_frontier_error_at_max, row.all_completed_frontier_error_at_max,
          row.forecast_covered_80, row.forecast_covered_95]
         for row in result.averages.itertuples()])
    brackets = {b: pair[1] for (b, name), pair in result.examples.items() if pair[1] is not None}
    rung_tables = {_share(b): format_rung_table(br, unit=sweep.resource_name)
                   for b, br in brackets.items()}
    if plot is not None:
        from scalekit.report import plot_allocations

        last = budgets[-1]
        plot_allocations(result.example_sweep,
                         {name: pair for (b, name), pair in result.examples.items() if b == last},
                         plot, rung_policy="forecast", title=f"budget {_share(last)}, first seed")
    report = {"mode": "replay", **result.to_dict(), "rung_tables": rung_tables}
    shown = [f"rungs at budget {b}:\n{t}" for b, t in rung_tables.items()][:1]
    return report, ([*shown, *(f"winner: {line}" for line in result.winners())], [table])


def _plan(sweep, budget, policy, eta, min_resource, surrogate, seed):
    from scalekit.allocate import plan_next
    from scalekit.allocate import get_policy
    from scalekit.allocate import format_rung_table
    from scalekit.report import table_data

    plan = plan_next(sweep, get_policy(policy, surrogate=surrogate, seed=seed), budget,
                     eta=eta, min_resource=min_resource, seed=seed)
    step = ("finished: every rung is trained, nothing left to do" if plan.rung is None
            else f"next actions (rung {plan.rung})")
    table = table_data(f"{step}; projected saving {plan.projected_saving:.1%} of the "
                       "exhaustive sweep", ["run", "action", "from", "to", "FLOPs"],
                       [[a["run"], a["action"], a.get("from", a.get("at")), a.get("to"),
                         a.get("flops")] for a in plan.actions])
    header = ([format_rung_table(plan.bracket, unit=sweep.resource_name)] if plan.bracket
              else [f"phase {d['phase']}: {d['action']} {', '.join(d['runs'])} ({d['why']})"
                    for d in plan.decisions])
    return {"mode": "plan", **plan.to_dict()}, (header, [table])


def _trainer(task: str, *, seed: int, store: Path, hparams: Path | None = None):
    """The trainer behind ``--run TASK``: ``synthetic`` (pure Python) or a bundled torch task
    (its learning-rate variants from ``hparams``), and where its variants' rates came from."""
    from scalekit.errors import InputError

    if task == "synthetic":
        from scalekit.allocate import SyntheticTrainer

        if hparams is not None:
            raise InputError("--hparams sets the learning rates of a torch task's runs, but "
                             "the synthetic task has no learning rate")
        return SyntheticTrainer(seed=seed, sizes=9, variants=3, max_compute=1e18, points=40), None
    from scalekit.train import task_trainer

    if hparams is None:
        return task_trainer(task, seed=seed, store=store), None
    from .law_hparams import hparams_lrs

    lrs, found = hparams_lrs(hparams)
    trainer = task_trainer(task, seed=seed, store=store, lrs=lrs)
    return trainer, {"source": str(hparams), "by_size": found,
                     "why": "each width's variants are the lr_variants (the interval's ends "
                            f"around the law's optimum) of the hparams fit {hparams} at its N "
                            "and D"}


def _run(task, store, budget, policy, eta, min_resource, surrogate, seed, workers, quiet,
         executor="local", jobs=None, hparams=None):
    from rich.text import Text

    from scalekit.allocate import get_policy
    from scalekit.allocate import fit_bracket
    from scalekit.allocate import candidate_sweep, run_allocation
    from scalekit.allocate import format_rung_table
    trainer, lrs = _trainer(task, seed=seed, store=store, hparams=hparams)
    sweep = candidate_sweep(trainer)
    bracket = (None if policy == "commit" else
               fit_bracket(sweep, sweep.runs, budget, eta=eta, min_resource=min_resource))
    if not quiet and bracket is not None:  # the rung table comes before any training
        print_renderable(Text(format_rung_table(bracket, unit=trainer.resource)))
    on_interrupt(lambda: f"the store {display(store)} keeps {_finished(store, task)} of task {task!r}; "
                 "run the same command again to resume")
    pool = None
    if executor != "local":  # the trainer calls go elsewhere; results come back to this process
        pool = job_executor(executor, workers=workers,
                            default_folder=Path(f"{store}.jobs" if isinstance(store, Path)
                                                else f"{task}.jobs"), **jobs)
    try:
        result = run_allocation(store, task, trainer,
                                get_policy(policy, surrogate=surrogate, seed=seed),
                                budget=budget, eta=eta, min_resource=min_resource, seed=seed,
                                workers=workers, executor=pool,
                                settings={"surrogate": surrogate,
                                          **({"variants": "hparams lr_variants"} if lrs else {})})
    finally:
        if pool is not None:
            pool.shutdown()
    allocation = result.allocation
    best = min(((float(c.loss[-1]), r) for r, c in allocation.observed.items() if len(c)),
               default=(None, None))
    text = "".join(f"--{note}\n" for note in result.notes) + (
        f"task {task!r}: {result.trained} advances trained now, {result.reused} read back "
        f"from the store; spent {allocation.spent:.4g} of {budget:.4g} FLOPs; " + (
            f"best run {best[1]} (loss {best[0]:.4f})" if best[1] is not None else
            "no run has logged a point yet (the budget ends before the first one)"))
    # the result (reads back with AllocationRunResult.from_dict) and what a reader looks for
    report = {**result.to_dict(), "mode": "run", "task": task, "spent_flops": allocation.spent,
              **({"learning_rates": lrs} if lrs else {}),
              "budget_flops": budget, "best_run": best[1], "best_loss": best[0],
              "rungs": [{"rung": r.index, "runs": r.runs, "resource": r.resource}
                        for r in result.bracket.rungs] if result.bracket else []}
    lines = [f"learning rates: {lrs['why']}"] if lrs else []
    lines += [f"learning rates at {size}: {d['message']}" for size, r in
              (lrs["by_size"].items() if lrs else ()) for d in r["diagnostics"]]
    lines += [f"phase {d['phase']}: {d['action']} {', '.join(d['runs'])} ({d['why']})"
              for d in result.decisions]
    return report, (lines + text.splitlines(), []), result


def _finished(store, task) -> str:
    from scalekit.allocate import AllocationState

    if not Path(store).is_file():
        return "no finished advance"
    with AllocationState(store) as state:
        done = sum(e["status"] == "done" for e in state.ledger(task).values())
    return f"{done} finished advance{'s' * (done != 1)}"


def _share(budget: float) -> str:
    return f"{budget:.1%}" if budget <= 1 else f"{budget:.3g}"


def register(app: typer.Typer) -> None:
    """Add the ``allocate`` command group to ``app``."""
    app.add_typer(allocate_app)
