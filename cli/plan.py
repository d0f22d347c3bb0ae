"""``scalekit plan``: compute-optimal plans from a fitted law of N and D.

The law is fitted exactly as ``scalekit fit`` fits it (the same data options,
declared once in :mod:`scalekit_cli.fit`), or read from a fit's JSON report
(``--from fit.json``), so ``plan --compute C`` and ``fit --target-compute C``
give the same plan on the same input.
"""

from __future__ import annotations

from pathlib import Path

import typer

from scalekit.compute import FLOPS_PER_PARAM_TOKEN, flops_rule

from .options import MORE, html_option, plot_option, verbose_option
from .common import (bootstrap_option, bounds_option, checked_inputs, checked_number,
                     ci_level_option, file_argument, format_option, law_columns,
                     json_option, map_option, open_curves, parse_mapping, print_tables,
                     notes_in_flags, quiet_option, seed_option,
                     store_option)
from .fit import (all_points_option, delta_option, drop_top_option, fit_rows, fit_settings,
                  law_option, n_jobs_option, objective_option, resample_option,
                  target_compute_option, y_option)

FORMAT = "plan"


def plan(
    file: Path | None = file_argument("Points or curves file"),
    store: Path | None = store_option(default=None),
    from_fit: Path | None = typer.Option(None, "--from", callback=checked_inputs, is_eager=True,
                                         help="A fit's JSON report (scalekit fit --json): plan "
                                         "from its law, no refit."),
    compute: float | None = target_compute_option("--compute"),
    target_loss: float | None = typer.Option(None, "--target-loss", help="Target loss: the "
                                                "least compute reaching it."),
    compare: str | None = typer.Option(None, "--compare", help="N,D of a planned run: the "
                                          "compute it spends beyond the optimum."),
    flops_per_param_token: float = typer.Option(FLOPS_PER_PARAM_TOKEN, "--flops-per-param-token",
                                                help="k in C = k·N·D.", callback=checked_number(
                                                    "--flops-per-param-token", low=0,
                                                    low_open=True)),
    unique_tokens: float | None = typer.Option(None, "--unique-tokens", help="Unique tokens "
                                                  "U available (with --law data_constrained)."),
    law: str | None = law_option(),
    y: str = y_option(),
    mapping: list[str] = map_option("params=non_embedding_params"),
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
    schedule_search: bool = typer.Option(False, "--schedule-search", metavar="", help="Choose a learning-"
                                         "rate schedule under a multi-power fit (--from the "
                                         "JSON of forecast --method multipower)."),
    total_steps: int | None = typer.Option(None, "--total-steps", help="With "
                                              "--schedule-search: the run's length in steps "
                                              "(at most 1,000,000)."),
    family: str = typer.Option("wsd", "--family", help="With --schedule-search: wsd (decay "
                               "start, final rate, shape), cosine (final rate) or free (a "
                               "non-increasing rate per step, from the best wsd)."),
    hparams: Path | None = typer.Option(None, "--hparams", help="A learning-rate and batch "
                                           "fit (scalekit law hparams --json): each plan "
                                           "carries its lr and batch at N*, D*."),
    plot: Path | None = plot_option(),
    json_out: Path | None = json_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
    verbose: bool = verbose_option(),
    fmt: str = format_option(),
) -> None:
    """Plan from a fitted law: by compute, by target loss, or against a chosen N, D."""
    from scalekit import serialise
    from scalekit.errors import InputError

    if schedule_search:
        return _schedule_search(from_fit, file=file, store=store, total_steps=total_steps,
                                family=family, plot=plot, html=html, json_out=json_out,
                                quiet=quiet, fmt=fmt)
    if total_steps is not None or plot is not None:
        raise InputError("--total-steps and --plot go with --schedule-search")

    if compute is None and target_loss is None and compare is None:
        raise InputError("give at least one of --compute C, --target-loss L, --compare N,D")
    pair = _pair(compare)
    from . import plan_data_constrained as constrained

    constrained.check_options(law, compute=compute, unique_tokens=unique_tokens,
                              target_loss=target_loss)
    shared = fit_settings(law=law, y=y, all_points=all_points, drop_top=drop_top, loss=loss,
                          delta=delta, bootstrap=bootstrap, ci_level=ci_level, resample=resample,
                          bounds=bounds)
    if from_fit is not None:
        if file is not None or store is not None:
            raise InputError("give either a curves FILE / --store DB or --from FIT.json, "
                             "not both")
        result, notes, input_sha = _read_fit(from_fit)
    else:
        curves, input_sha = open_curves(file, store, parse_mapping(mapping), metric=y,
                                        keep=law_columns(law))
        result = fit_rows(curves, shared, seed=seed, n_jobs=n_jobs)
        notes = notes_in_flags(result.points.notes)  # the reader's notes and diagnostics travel in
    settings = {**shared, "from": None if from_fit is None else str(from_fit),
                "compute": compute, "target_loss": target_loss, "compare": pair,
                "flops_per_param_token": flops_per_param_token}
    if result.law.name == constrained.LAW:
        settings["unique_tokens"] = unique_tokens
        body = constrained.body(result, notes, (), compute=compute, unique_tokens=unique_tokens,
                                compare=pair, k=flops_per_param_token)
        if not quiet:
            constrained.show(body)
    else:
        body = plan_body(result, notes, compute=compute, target_loss=target_loss,
                         compare=pair, k=flops_per_param_token)
        if not quiet:
            _print(body, result.ci_level, fmt, verbose)
    if hparams is not None:
        from .law_hparams import attach_hparams

        settings["hparams"] = str(hparams)
        attach_hparams(body, hparams, quiet=quiet)
    if json_out is not None:
        serialise.write_report(json_out, FORMAT, body, input_sha256=input_sha, seed=seed,
                               settings=settings)
    if html is not None:
        from .fit import fit_page
        from .report import write_page

        write_page(html, fit_page(result, {**body, "plan": body.get("by_compute")}, settings))


def _schedule_search(from_fit, *, file, store, total_steps, family, plot, html, json_out,
                     quiet, fmt) -> None:
    """``--schedule-search``: the schedule of --family with the least predicted final loss."""
    import math

    from scalekit import serialise
    from scalekit.errors import InputError
    from scalekit.laws import MULTIPOWER_PARAMS
    from scalekit.report import table_data
    from scalekit.serialise import read_json

    from .common import input_sha256

    if from_fit is None or file is not None or store is not None:
        raise InputError("--schedule-search reads a multipower fit: give --from FIT.json "
                         "(the --json of forecast --method multipower) and no curves")
    if total_steps is None:
        raise InputError("--schedule-search needs --total-steps T")
    report = read_json(from_fit, what="multipower fit (JSON)")
    try:
        params, stats = report["params"], report["stats"]
        warmup, peak = int(stats["warmup_steps"]), float(stats["peak_rate"])
        values = [params[name] for name in MULTIPOWER_PARAMS]
    except (ValueError, KeyError, TypeError, OverflowError):
        raise InputError("not the JSON of forecast --method multipower (no params, "
                         "stats.warmup_steps, stats.peak_rate)", source=str(from_fit)) from None
    bad = [n for n, v in zip(MULTIPOWER_PARAMS, values, strict=True)
           if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        raise InputError(f"the fit's parameter {bad[0]} is {params[bad[0]]!r}, but must be a "
                         "finite number: write the fit again with forecast --method multipower",
                         source=str(from_fit))
    from scalekit.surrogates import schedule_curves, search_schedule

    result = search_schedule(params, total_steps=total_steps, warmup=warmup, peak=peak,
                             family=family, covariance=stats.get("covariance"))
    if not quiet:
        from scalekit.report import Estimate

        rows = [["best", result.best, result.best_loss],
                ["cosine", result.baseline, result.baseline_loss],
                ["gain", "", Estimate(result.gain, *result.gain_interval, digits=4)]]
        columns, lines = ["", "schedule", "predicted final loss [95%]"], []
        if fmt == "table":  # a spec whole on its own line, not folded mid-word in a cell
            rows = [[row[0], row[2]] for row in rows]
            columns = [columns[0], columns[2]]
            lines = [f"best: {result.best}", f"cosine: {result.baseline}"]
        print_tables([table_data(f"schedule search ({family}, {total_steps} steps)", columns,
                                 rows)], fmt, lines=lines)
    settings = {"schedule_search": True, "from": str(from_fit), "total_steps": total_steps,
                "family": family}
    if plot is not None or html is not None:
        from scalekit.report import plot_schedule_search

        curves = schedule_curves(params, [result.best_schedule(), result.baseline],
                                 total_steps=total_steps)
        figure = plot_schedule_search(curves, plot, labels={result.best: f"best {family}",
                                                             result.baseline: "cosine"})[0].figure
        if html is not None:
            from .report import result_page, write_page

            write_page(html, result_page(result, result.to_dict(), settings,
                                         figures=[("The best schedule against cosine",
                                                   figure)], table=result.to_frame()))
    if json_out is not None:
        serialise.write_report(json_out, FORMAT, result, input_sha256=input_sha256(from_fit),
                               seed=0, settings=settings)


def plan_body(result, notes, *, compute, target_loss, compare, k: float) -> dict:
    """The plan report's body: :meth:`PlanReport.to_dict` of the law and the answer to each
    question asked, with diagnostics (the fit's, which start with the reader's, then the
    plan's)."""
    from scalekit.fit import PlanReport
    from scalekit.fit import compare_allocation, plan_for_compute, plan_for_loss

    report = PlanReport(result, flops_rule(k), notes=list(notes),
                        diagnostics=list(result.diagnostics))
    if compute is not None:
        report.by_compute = plan_for_compute(result, compute, flops_per_param_token=k)
        report.diagnostics += report.by_compute.diagnostics
    if target_loss is not None:
        report.by_loss = plan_for_loss(result, target_loss, flops_per_param_token=k)
    if compare is not None:
        n, d = compare
        report.compare = p = compare_allocation(result, n, d, flops_per_param_token=k)
        report.compare_summary = (
            f"N={n:.3g}, D={d:.3g} spends C={p['compute']:.3g} FLOPs; the optimum reaches the "
            f"same loss with {p['optimal_compute']:.3g}: {p['extra']:.3g} FLOPs "
            f"({p['extra_percent']:.1f}% of the optimum, {p['saving_percent']:.1f}% of the "
            "planned compute) could be saved")
    return report.to_dict()


def _read_fit(path: Path):
    """The FitResult, notes and input hash of a ``scalekit fit --json`` report."""
    import math

    from scalekit.diagnostics import Diagnostic
    from scalekit.errors import InputError
    from scalekit.fit import FitResult
    from scalekit.serialise import read_json, report_kind

    from .common import input_sha256

    report = read_json(path, what="fit report (JSON)")
    if report_kind(report, source=path) != "fit":
        raise InputError("not a scalekit fit report (its format is not scalekit.fit/…); write "
                         "one with scalekit fit --json", source=str(path))
    if "groups" in report:
        raise InputError("a fit per group (--group) holds several laws; plan from a fit of "
                         "one group", source=str(path))
    try:
        result = FitResult.from_dict(report)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"the fit report is incomplete ({exc})", source=str(path)) from None
    for param in result.law.params:
        value = result.values[param.name]
        if not (math.isfinite(value) and param.lower <= value <= param.upper):
            raise InputError(f"the law's parameter {param.name} is {value:g}, but must lie in "
                             f"[{param.lower:g}, {param.upper:g}]: fit again with scalekit fit "
                             "--json", source=str(path))
    planned = [Diagnostic.from_dict(d) for d in (report.get("plan") or {}).get("diagnostics", [])]
    result.diagnostics = [d for d in result.diagnostics if d not in planned]
    return result, list(report.get("notes", [])), input_sha256(path)


def _pair(text: str | None) -> tuple[float, float] | None:
    from scalekit.errors import InputError

    if text is None:
        return None
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if len(values) != 2:
        raise InputError(f"--compare takes N,D (two numbers), got {text!r}")
    return values[0], values[1]


def _print(body: dict, level: float, fmt: str, verbose: bool) -> None:
    from scalekit.diagnostics import Diagnostic
    from scalekit.report import diagnostic_lines
    from scalekit.report import table_data

    rows = []
    if "by_compute" in body:
        p = body["by_compute"]
        rows.append(["compute", p["compute"], _ci(p.get("params"), p.get("params_ci")),
                     _ci(p.get("tokens"), p.get("tokens_ci")),
                     _ci(p.get("tokens_per_param"), p.get("tokens_per_param_ci")),
                     _ci(p["loss"], p.get("loss_pi"), 4)])
    if "by_loss" in body:
        p = body["by_loss"]
        rows.append(["loss", _ci(p["compute"], p.get("compute_ci")), p["params"],
                     p["tokens"], p["tokens_per_param"], p["target_loss"]])
    if "compare" in body:
        p = body["compare"]
        rows.append(["optimum for compared run", p["optimal_compute"],
                     p["optimal_params"], p["optimal_tokens"],
                     p["optimal_tokens"] / p["optimal_params"], p["loss"]])
    table = table_data(f"Plan from the {body['law']['name']} law (intervals: {100 * level:g}%; "
                       "loss: prediction interval)",
                       ["by", "compute (FLOPs)", "N*", "D*", "D*/N*", "loss"], rows)
    lines = [body["compare_summary"]] if "compare_summary" in body else []
    if body["notes"] or body["diagnostics"]:
        lines.append("Notes and warnings")
        lines += [line for line, _ in diagnostic_lines(
            body["notes"], [Diagnostic.from_dict(d) for d in body["diagnostics"]],
            verbose=verbose, more=MORE)]
    lines.append(body["verdict"])
    print_tables([table], fmt, title="Compute plan", header=[f"FLOPs: {body['convention']}"],
                 lines=lines)


def _ci(value, ci, digits: int = 3):
    from scalekit.report import Estimate

    low, high = ci if ci is not None else (None, None)
    return Estimate(value, low, high, digits=digits)


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""
    app.command("plan")(plan)
