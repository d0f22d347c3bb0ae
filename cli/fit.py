"""``scalekit fit``: fit a scaling law to a curves file or store and report it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from .common import (bounds_option, checked_number, choice_option, ci_level_option, file_argument,
                     law_columns,
                     in_flags, library_choices, open_curves, parse_mapping, print_renderable,
                     notes_in_flags, store_option)
from .options import (MORE, bootstrap_option, html_option, json_option, map_option,
                      plot_option, quiet_option, seed_option, verbose_option)

FORMAT = "fit"


# The data and fitting options, declared once: `scalekit fit` and `scalekit plan` take them all.
def law_option():
    return typer.Option(None, "--law", help="Law name (chinchilla, kaplan, frontier, "
                        "saturating_power, power, bnsl…) or an expression such as "
                        "'E + A*N**-a'. Chosen from the columns if omitted.")


def y_option():
    return typer.Option("loss", "--y", help="Metric column to fit.")


def all_points_option():
    return typer.Option(False, "--all-points", metavar="",
                        help="Fit every logged point, not only each run's last.")


def drop_top_option():
    return typer.Option(0, "--drop-top", help="Drop the K highest values of y first.",
                        callback=checked_number("--drop-top", low=0, integer=True))


def objective_option():
    return choice_option("huber", "--objective",
                         library_choices("scalekit.fit", "LOSSES"),
                         "Objective on log residuals: huber, squared or soft_l1.")


def delta_option():
    return typer.Option(1e-3, "--delta", help="Threshold δ of huber and soft_l1 on log residuals.",
                        callback=checked_number("--delta", low=0, low_open=True))


def n_jobs_option():
    return typer.Option(None, "--n-jobs", help="Processes for the bootstrap (default: all "
                        "cores; at most the cores and the resamples).",
                        callback=checked_number("--n-jobs", low=1, integer=True))


def resample_option():
    return choice_option(None, "--resample", library_choices("scalekit.fit", "RESAMPLE"),
                         "What a bootstrap resample draws: runs "
                         "(whole runs; the default when runs have several points) or points.")


def target_compute_option(*names: str):
    return typer.Option(None, "--target-compute", *names, help="Plan for this compute (FLOPs).",
                        callback=checked_number("--target-compute", low=0, low_open=True))


def fit_settings(*, law, y, all_points, drop_top, loss, delta, bootstrap, ci_level, resample,
                 bounds=None) -> dict:
    """The settings of the shared options (checked as they are parsed), as the JSON report
    records them."""
    return {"law": law, "y": y, "all_points": all_points, "drop_top": drop_top, "loss": loss,
            "delta": delta, "bootstrap": bootstrap, "ci_level": ci_level, "resample": resample,
            "bounds": bounds}


def fit_rows(rows, settings: dict, *, x=None, seed: int, n_jobs):
    """:func:`scalekit.fit.fit_frame` of ``rows`` with the shared settings; the fit's note
    that fewer bootstrap workers ran than ``--n-jobs`` asked for joins the notes."""
    from scalekit.fit import fit_frame

    result = fit_frame(rows, law=settings["law"], x=x, y=settings["y"],
                        all_points=settings["all_points"], drop_top=settings["drop_top"],
                        loss=settings["loss"], delta=settings["delta"],
                        bootstrap=settings["bootstrap"], ci_level=settings["ci_level"],
                        seed=seed, n_jobs=n_jobs, resample=settings["resample"],
                        bounds=settings.get("bounds"))
    if "workers_note" in result.stats:
        result.points.notes.append(f"bootstrap: {result.stats['workers_note']} (--n-jobs {n_jobs})")
    result.diagnostics[:] = [replace(d, message=in_flags(d.message)) for d in result.diagnostics]
    return result


def fit(
    file: Path | None = file_argument(),
    store: Path | None = store_option(default=None),
    law: str | None = law_option(),
    x: str | None = typer.Option(None, "--x", help="Column for the law's x input."),
    y: str = y_option(),
    group: str | None = typer.Option(None, "--group", help="Fit one law per value of this column."),
    mapping: list[str] = map_option(),
    all_points: bool = all_points_option(),
    drop_top: int = drop_top_option(),
    loss: str = objective_option(),
    delta: float = delta_option(),
    bounds: str | None = bounds_option(),
    bootstrap: int = bootstrap_option(1000),
    ci_level: float = ci_level_option(),
    resample: str | None = resample_option(),
    seed: int = seed_option(),
    n_jobs: int | None = n_jobs_option(),
    target_compute: float | None = target_compute_option(),
    hparams: Path | None = typer.Option(None, "--hparams", help="A learning-rate and batch "
                                           "fit (scalekit law hparams --json): the plan at "
                                           "--target-compute carries its lr and batch."),
    json_out: Path | None = json_option(),
    plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
    verbose: bool = verbose_option(),
) -> None:
    """Fit a scaling law, with standard errors, bootstrap intervals and a compute plan."""
    from scalekit.fit import plan_for_compute
    from scalekit import serialise
    from scalekit.report import fit_renderables

    if hparams is not None and target_compute is None:
        from scalekit.errors import InputError

        raise InputError("--hparams gives the lr and batch of a plan: give --target-compute C")
    shared = fit_settings(law=law, y=y, all_points=all_points, drop_top=drop_top, loss=loss,
                          delta=delta, bootstrap=bootstrap, ci_level=ci_level, resample=resample,
                          bounds=bounds)
    curves, input_sha = open_curves(file, store, parse_mapping(mapping), metric=y,
                                    keep=(x, group, *law_columns(law)))
    settings = {**shared, "x": x, "group": group, "target_compute": target_compute,
                "flops_convention": "C = 6·N·D where compute is derived"}
    if hparams is not None:
        settings["hparams"] = str(hparams)
    groups = [(None, curves)] if group is None else _groups(curves, group)
    bodies = []
    for value, rows in groups:
        result = fit_rows(rows, shared, x=x, seed=seed, n_jobs=n_jobs)
        notes = notes_in_flags(result.points.notes)  # the reader's among them, as its diagnostics
        plan = None if target_compute is None else plan_for_compute(result, target_compute)
        diagnostics = all_diagnostics(result, plan)
        bodies.append(fit_body(result, notes, plan, diagnostics, group, value))
        if not quiet:
            title = None if value is None else f"{group} = {value}"
            print_renderable(fit_renderables(result, notes=notes, plan=plan, title=title,
                                             verbose=verbose, more=MORE))
        if hparams is not None and plan is not None:
            from .law_hparams import hparams_at, print_hparams

            bodies[-1]["hparams"] = hparams_at(hparams, {"plan": (plan.get("params"),
                                                                   plan.get("tokens"))})
            if not quiet:
                print_hparams(bodies[-1]["hparams"])
        if plot is not None:
            _plot(result, _plot_path(plot, value), target_compute, plan,
                  None if value is None else f"{group} = {value}")
        if html is not None:
            from .report import write_page

            figure = _plot(result, None, target_compute, plan,
                           None if value is None else f"{group} = {value}")
            write_page(_plot_path(html, value), fit_page(result, bodies[-1], settings, figure))
    if json_out is not None:
        body = bodies[0] if group is None else {"groups": bodies}
        serialise.write_report(json_out, FORMAT, body, input_sha256=input_sha,
                               seed=seed, settings=settings)


def all_diagnostics(result, plan) -> list:
    """The fit's diagnostics, then the plan's."""
    return list(result.diagnostics) + (list(plan["diagnostics"]) if plan else [])


def _groups(curves, column):
    """``(value, curves of the rows with that value)`` for each value of ``column``."""
    from scalekit.checks import fail

    if column not in curves.frame:
        raise fail("group", column, "a column of the data")
    return [(value, curves.with_frame(rows))
            for value, rows in curves.frame.groupby(column, sort=True)]


def fit_body(result, notes, plan, diagnostics, group=None, value=None) -> dict:
    """The JSON body of one fit: the result as :meth:`FitResult.to_dict` writes it (so
    ``scalekit plan --from`` can rebuild it), the plan, ``diagnostics`` (the fit's and
    the plan's, as objects), ``notes`` (how the points were chosen) and ``warnings``
    (the messages of the warning and error diagnostics)."""
    body = {key: v for key, v in result.to_dict().items() if key != "format"}
    body.update(plan=plan, diagnostics=[d.to_dict() for d in diagnostics], notes=list(notes),
                warnings=[d.message for d in diagnostics if d.severity != "info"])
    if group is not None:
        body["group"] = {"column": group, "value": value}
    return body


def _plot_path(path: Path, value) -> Path:
    return path if value is None else path.with_name(f"{path.stem}-{value}{path.suffix}")


def fit_page(result, body: dict, settings: dict, figure=None) -> str:
    """The HTML page of one fit: the law and the plan, the figures (``figure``: the data's,
    when the data are at hand; the fitted law's always), parameters, diagnostics, settings."""
    from scalekit.formatting import format_number
    from scalekit.report import plot_law
    from scalekit.report import plan_rows
    from scalekit.report import html_page

    plan = body.get("plan")
    answer = [result.equation()]
    if plan:
        answer.append(f"Plan at {format_number(plan['compute'])} FLOPs "
                      f"({plan.get('convention', 'C = 6·N·D')}):")
        answer += [f"{k}: {v}" for k, v in plan_rows(plan).items()]
    figures = [("The fit and its data", figure)] if figure is not None else []
    figures.append(("The fitted law with its confidence band", plot_law(result).figure))
    return html_page(f"scalekit fit: {result.law.name}", answer=answer, figures=figures,
                     tables=[("Parameters and derived quantities", result.to_frame())],
                     diagnostics=body.get("diagnostics", []), notes=body.get("notes", []),
                     settings=settings)


def _plot(result, path: Path | None, target_compute: float | None, plan, title):
    """Draw the fit with its data (to ``path`` when given); return the figure (None for a
    law of several inputs but N and D, drawn by :func:`plot_law` alone)."""
    from scalekit.report import plot_curve, plot_surface

    prepared = result.points

    if set(result.law.inputs) == {"params", "tokens"}:
        return plot_surface(result, prepared.X, prepared.y, path, plan=plan, title=title).figure
    elif len(result.law.inputs) == 1:
        (name,) = result.law.inputs
        extend = target_compute if name == "compute" else None
        return plot_curve(result, prepared.X[name], prepared.y, path, x_label=name,
                          extend_to=extend, plan=plan if name == "compute" else None,
                          title=title).figure
    elif path is not None:  # no figure of the data: the law one input at a time
        from scalekit.report import plot_law

        return plot_law(result, path).figure
    return None


def register(app: typer.Typer) -> None:
    """Add the ``fit`` command to ``app``."""
    app.command("fit")(fit)
