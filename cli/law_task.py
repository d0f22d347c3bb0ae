"""``scalekit law task``: task accuracy of a target (N, D) from a model ladder, in two steps.

Step 1 (N, D) -> task loss, step 2 task loss -> accuracy (Bhagia et al. 2024); see
:mod:`scalekit.planners._task_law`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .options import html_option
from .common import (bootstrap_option, checked_inputs, ci_level_option, display, json_option,
                     parse_target, plot_option, print_renderable, quiet_option, seed_option,
                     store_option)

X_CHOICES = ("bpb", "c4", "ce")


def task(
    files: list[Path] = typer.Argument(None, callback=checked_inputs, is_eager=True,
                                       help="One evaluation CSV per ladder run (or "
                                            "--store)."),
    runs: Path | None = typer.Option(None, "--runs", callback=checked_inputs, is_eager=True,
                                     help="Run table (CSV or JSON; OLMo's "
                                          "final.json as it stands), matched to the files by "
                                          "file name."),
    store: str | None = store_option(None),
    predict: str | None = typer.Option(None, "--predict",
                                          help="Target as N=<params>,D=<tokens>."),
    tasks: list[str] = typer.Option([], "--task", help="Task name (repeatable); the paper's "
                                    "eight by default: mmlu_avg_test_5shot, hellaswag_val_5shot, "
                                    "arc_challenge_test_5shot, arc_easy_test_5shot, "
                                    "piqa_val_5shot, csqa_val_5shot, socialiqa_val_5shot, "
                                    "openbookqa_test_5shot."),
    x: str = typer.Option("bpb", "--x", help="Intermediate metric: bpb (task bits-per-byte), "
                          "c4 (C4 loss) or ce (task cross-entropy)."),
    actual: Path | None = typer.Option(None, "--actual", callback=checked_inputs, is_eager=True,
                                       help="The target run's evaluation "
                                            "file (named in --runs): its last checkpoint is "
                                            "compared with the predictions."),
    evaluate: bool = typer.Option(False, "--evaluate", metavar="", help="Hold out the largest size, fit "
                                  "the rest and predict each held-out run; print the errors."),
    bootstrap: int = bootstrap_option(200),
    ci_level: float = ci_level_option(),
    seed: int = seed_option(),
    json_out: Path | None = json_option(),
    plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Predict task accuracies of a target run from a ladder of small runs (two steps)."""
    from scalekit import serialise
    from scalekit.curves import read_ladder
    from scalekit.errors import InputError
    from scalekit.planners import TASKS, evaluate_holdout, predict_tasks

    if x not in X_CHOICES:
        raise InputError(f"The value of `--x` is {x!r}, but must be one of {', '.join(X_CHOICES)}.")
    for name in tasks:
        if name not in TASKS:
            raise InputError(f"The value of `--task` is {name!r}, but must be a task of the "
                             "ladder such as piqa_val_5shot (see scalekit law task --help).")
    if predict is None and not evaluate:
        raise InputError("give `--predict N=…,D=…` or `--evaluate`")
    if html is not None and predict is None:
        raise InputError("--html writes the page of a prediction: give `--predict N=…,D=…`")
    files = list(files or [])
    if (store is None) == (not files):
        raise InputError("give the ladder's files (with `--runs TABLE`) or `--store DB`, "
                         "not both")
    if runs is None and (files or actual is not None):
        raise InputError("give `--runs TABLE`: the run table of the files")
    target = None if predict is None else parse_target(predict)
    if store is None:
        ladder = read_ladder(files, runs)
    else:
        ladder = _ladder_from_store(store, tasks or list(TASKS), x)
    actual_run = None if actual is None else read_ladder([actual], runs)[0]
    settings = {"x": x, "tasks": list(tasks), "bootstrap": bootstrap, "ci_level": ci_level,
                "runs": str(runs) if store is None else f"store {display(store)}"}
    body = {}
    result = None
    if target is not None:
        result = predict_tasks(ladder, *target, tasks=tasks or None, x=x, bootstrap=bootstrap,
                               ci_level=ci_level, seed=seed, actual=actual_run)
        body = result.to_dict()
        if not quiet:
            print_renderable(result.summary())
    if evaluate:
        held_out = evaluate_holdout(ladder, tasks=tasks or None, x=x, bootstrap=bootstrap,
                                    ci_level=ci_level, seed=seed)
        body["evaluation"] = [r.to_dict() for r in held_out]
        if not quiet:
            print_renderable(_evaluation_table(held_out))
    if json_out is not None:
        serialise.write_report(json_out, "task_law", body, input_sha256=None, seed=seed,
                               settings=settings)
    if plot is not None and result is not None:
        from scalekit.report import plot_task_law

        plot_task_law(result, plot)
    if html is not None:
        from scalekit.report import plot_task_law

        from .report import result_page, write_page

        write_page(html, result_page(result, body, settings, table=result.to_frame(), figures=[
            ("Task loss and accuracy against the ladder, with the prediction",
             plot_task_law(result))]))


def _ladder_from_store(store, tasks, x):
    """The ladder imported into ``store`` (``store import FILES --runs TABLE``), with the
    columns of ``tasks`` for the intermediate ``x``."""
    from scalekit.curves import ladder_from_store
    from scalekit.curves import CurveStore
    from scalekit.planners import TASKS

    columns = sorted({c for name in tasks for part in TASKS[name].columns(x) for c in part})
    with CurveStore(store, create=False) as opened:
        return ladder_from_store(opened, columns)


def _evaluation_table(results):
    from rich.table import Table

    from scalekit.formatting import format_interval, format_number

    table = Table(title="Held-out runs (largest size), predicted from the smaller ones")
    for column in ("run N, D", "task", "actual", "predicted", "interval", "error"):
        table.add_column(column)
    for result in results:
        for p in result.predictions:
            table.add_row(f"{format_number(result.params)}, {format_number(result.tokens)}",
                          p.task, format_number(p.actual), format_number(p.accuracy),
                          format_interval(p.accuracy_interval), format_number(p.error))
    return table


def add_task_command(law_app: typer.Typer) -> None:
    """Add ``task`` to the ``law`` command group."""
    law_app.command("task")(task)
