"""``scalekit fit``: fit a scaling law to a curves file or store and report it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .common import (bootstrap_option, ci_level_option, file_argument, json_option,
                     map_option, open_frame, parse_mapping, print_renderable, quiet_option,
                     seed_option, store_option)

FORMAT = "fit"


def fit(
    file: Optional[Path] = file_argument(),
    store: Optional[Path] = store_option(default=None),
    law: Optional[str] = typer.Option(None, "--law", help="Law name (chinchilla, kaplan, frontier, "
                                      "saturating_power, power, bnsl…) or an expression such as "
                                      "'E + A*N**-a'. Chosen from the columns if omitted."),
    x: Optional[str] = typer.Option(None, "--x", help="Column for the law's x input."),
    y: str = typer.Option("loss", "--y", help="Metric column to fit."),
    group: Optional[str] = typer.Option(None, "--group", help="Fit one law per value of this column."),
    mapping: list[str] = map_option(),
    all_points: bool = typer.Option(False, "--all-points",
                                    help="Fit every logged point, not only each run's last."),
    drop_top: int = typer.Option(0, "--drop-top", help="Drop the K highest values of y first."),
    loss: str = typer.Option("huber", "--loss", help="Objective on log residuals: huber or squared."),
    delta: float = typer.Option(1e-3, "--delta", help="Huber δ on log residuals."),
    bootstrap: int = bootstrap_option(1000),
    ci_level: float = ci_level_option(),
    seed: int = seed_option(),
    n_jobs: Optional[int] = typer.Option(None, "--n-jobs", help="Processes for the bootstrap "
                                         "(default: all cores)."),
    target_compute: Optional[float] = typer.Option(None, "--target-compute",
                                                   help="Plan for this compute (FLOPs)."),
    json_out: Optional[Path] = json_option(),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG/SVG plot here."),
    quiet: bool = quiet_option(),
) -> None:
    """Fit a scaling law, with standard errors, bootstrap intervals and a compute plan."""
    from scalekit.fit.frame import fit_frame
    from scalekit.fit.compute_optimal import plan_for_compute
    from scalekit import serialise
    from scalekit.report.fit_report import fit_renderables

    frame, input_sha = open_frame(file, store, parse_mapping(mapping), metric=y, keep=(x, group))
    settings = {"law": law, "x": x, "y": y, "group": group, "all_points": all_points,
                "drop_top": drop_top, "loss": loss, "delta": delta, "bootstrap": bootstrap,
                "ci_level": ci_level, "target_compute": target_compute,
                "flops_convention": "C = 6·N·D where compute is derived"}
    groups = [(None, frame)] if group is None else _groups(frame, group)
    bodies = []
    for value, rows in groups:
        result, prepared = fit_frame(rows, law=law, x=x, y=y, all_points=all_points,
                                     drop_top=drop_top, loss=loss, delta=delta,
                                     bootstrap=bootstrap, ci_level=ci_level, seed=seed,
                                     n_jobs=n_jobs)
        notes = prepared.notes + list(frame.attrs.get("notes", []))
        plan = None if target_compute is None else plan_for_compute(result, target_compute)
        bodies.append(_body(result, notes, plan, group, value))
        if not quiet:
            title = None if value is None else f"{group} = {value}"
            print_renderable(fit_renderables(result, notes=notes, plan=plan, title=title))
        if plot is not None:
            _plot(result, prepared, _plot_path(plot, value), target_compute, plan,
                  None if value is None else f"{group} = {value}")
    if json_out is not None:
        body = bodies[0] if group is None else {"groups": bodies}
        serialise.write_report(json_out, FORMAT, body, input_sha256=input_sha,
                               seed=seed, settings=settings)


def _groups(frame, column):
    from scalekit.checks import fail

    if column not in frame:
        raise fail("group", column, "a column of the data")
    return list(frame.groupby(column, sort=True))


def _body(result, notes, plan, group, value) -> dict:
    body = {
        "law": {"name": result.law.name, "formula": result.law.formula,
                "inputs": list(result.law.inputs)},
        "params": {name: {"value": result.values[name], "stderr": result.stderr.get(name),
                          "ci": list(result.ci[name]) if result.ci.get(name) is not None else None}
                   for name in result.values},
        "ci_level": result.ci_level,
        "stats": dict(result.stats),
        "derived": dict(result.derived),
        "plan": plan,
        "notes": list(notes),
        "warnings": list(result.warnings),
    }
    if group is not None:
        body["group"] = {"column": group, "value": value}
    return body


def _plot_path(path: Path, value) -> Path:
    return path if value is None else path.with_name(f"{path.stem}-{value}{path.suffix}")


def _plot(result, prepared, path: Path, target_compute: float | None, plan, title) -> None:
    from scalekit.report.fit_plots import plot_curve, plot_surface

    if set(result.law.inputs) == {"params", "tokens"}:
        plot_surface(result, prepared.X, prepared.y, path, plan=plan, title=title)
    elif len(result.law.inputs) == 1:
        (name,) = result.law.inputs
        extend = target_compute if name == "compute" else None
        plot_curve(result, prepared.X[name], prepared.y, path, x_label=name, extend_to=extend,
                   plan=plan if name == "compute" else None, title=title)
    else:
        from scalekit.errors import InputError

        raise InputError(f"no plot for a law of inputs {', '.join(result.law.inputs)}")


def register(app: typer.Typer) -> None:
    """Add the ``fit`` command to ``app``."""
    app.command("fit")(fit)
