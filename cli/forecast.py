"""``scalekit forecast``: where will each run's loss go, with calibrated quantiles."""

from __future__ import annotations

from pathlib import Path

import typer

from .options import html_option
from .common import (checked_inputs, choice_option, format_option, json_option,
                     library_choices, map_option, open_curves, parse_mapping, parse_pairs,
                     plot_option, notes_in_flags, print_tables, quiet_option, store_option)

FORMAT = "forecast"


_METHODS = ("scalekit.surrogates", "METHODS")


def forecast(
    file: list[Path] | None = typer.Argument(None, callback=checked_inputs, is_eager=True,
                                             help="Curves file(s) (CSV, JSONL, "
                                                  "Parquet, W&B CSV; a folder of TensorBoard "
                                                  "logs, W&B offline runs or mlruns; an Optuna "
                                                  "or MLflow SQLite file); a file without a run "
                                                  "column is one run named by the file. Omit to "
                                                  "read --store."),
    store: Path | None = store_option(default=None),
    to: float | None = typer.Option(None, "--to", help="Forecast each run to this step "
                                       "(or this value of --x)."),
    to_compute: float | None = typer.Option(
        None, "--to-compute", help="Forecast each run to this compute (FLOPs); x is compute."),
    x: str | None = typer.Option(None, "--x", help="x column (default: step; compute with "
                                    "--to-compute)."),
    y: str = typer.Option("loss", "--y", help="Metric column to forecast (lower is better)."),
    method: str = choice_option("stacked-backtest", "--method",
                                library_choices(*_METHODS, "all", "multipower"),
                                "stacked-backtest (default: M4, ensemble and average stacked "
                                "by backtests of the prefixes), ensemble, average (equal family "
                                "weights), gp, joint, "
                                "ensemble+joint, m4-paper (M4 fitted with the settings of "
                                "Alabdulmohsin et al. 2022), or one family (vap, pow3, "
                                "loglinear, hill3, logpower, pow4, mmf, exp4, janoschek, weibull, "
                                "ilog2, satpow, m4); multipower (the multi-power law of Luo et "
                                "al. 2025 over the runs' learning-rate schedules: --fit-on, "
                                "--predict-schedule)."),
    evaluate: bool = typer.Option(False, "--evaluate", metavar="",
                                  help="Treat the runs as complete: cut each at 10/20/30/50%, "
                                  "forecast the rest, score --method (or 'all')."),
    holdout_column: str | None = typer.Option(
        None, "--holdout-column", help="With --evaluate: fit each run on its rows where this "
        "column is 1 and forecast the others (the protocol of Alabdulmohsin et al. 2022) "
        "instead of cutting at 10/20/30/50%."),
    by: str | None = typer.Option(None, "--by", help="With --holdout-column: score per "
                                     "value of this column (e.g. Domain)."),
    reference: str = choice_option("m4-paper", "--reference", library_choices(*_METHODS), "With "
                                   "--holdout-column: the method win rates and ratios compare "
                                   "with."),
    duplicates: str = choice_option("error", "--duplicates",
                                    library_choices("scalekit.curves", "DUPLICATES"),
                                    "A step a run logs twice: error, first or last."),
    runs: list[str] = typer.Option([], "--run", metavar="RUN", help="Only this run (repeatable)."),
    fit_on: str | None = typer.Option(None, "--fit-on", help="With --method multipower: "
                                         "the runs fitted at once, comma-separated."),
    predict_schedule: list[str] = typer.Option(
        [], "--predict-schedule", help="With --method multipower: a schedule to forecast, a "
        "spec (cosine:warmup=2160,peak=3e-4,final=3e-5,total=24000; wsd:…,decay=D; "
        "constant:…; two_stage:…,second=R,switch=K) or a run (repeatable)."),
    schedule: list[str] = typer.Option([], "--schedule", help="A run's schedule as RUN=SPEC "
                                       "(repeatable; with multipower, else its lr column). "
                                       "The default method then takes off the loss drop "
                                       "the rate's fall brings."),
    total_steps: int | None = typer.Option(None, "--total-steps", help="Where every run "
                                              "ends (its schedule's last step): no forecast "
                                              "past it; by default the curves' total_steps "
                                              "or configured steps."),
    free_shape: bool = typer.Option(False, "--free-shape", metavar="",
                                    help="With --method multipower: "
                                    "fit the loss drop's shape (C, beta, gamma) without its "
                                    "default prior (docs/schedules.md)."),
    mapping: list[str] = map_option(),
    json_out: Path | None = json_option(),
    plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
    fmt: str = format_option(),
) -> None:
    """Forecast learning curves (median and 50/80/95% intervals), or score the surrogates."""
    from scalekit import serialise
    from scalekit.errors import InputError
    from scalekit.formatting import collapse_notes
    if method == "multipower":
        return _multipower(file, store, fit_on=fit_on, predict=predict_schedule,
                           schedule=schedule, total_steps=total_steps, evaluate=evaluate, y=y,
                           mapping=mapping, free_shape=free_shape,
                           duplicates=duplicates, json_out=json_out, plot=plot, html=html,
                           quiet=quiet, fmt=fmt)
    if fit_on is not None or predict_schedule or free_shape:
        raise InputError("--fit-on, --predict-schedule and --free-shape go with --method "
                         "multipower")
    if schedule and (evaluate or method != "stacked-backtest"):
        raise InputError("--schedule goes with --method multipower, or with a forecast (--to) "
                         "by the default stacked-backtest")
    if file is not None and len(file) > 1:
        raise InputError("several curves files go with --method multipower; give one FILE")
    file = file[0] if file else None
    if evaluate == (to is not None or to_compute is not None) or (to is not None and
                                                                 to_compute is not None):
        raise InputError("give exactly one of --to STEP, --to-compute FLOPS or --evaluate")
    if to_compute is not None and x not in (None, "compute"):
        raise InputError(f"--to-compute forecasts along compute, but --x is {x!r}; give the "
                         f"target in {x} with --to")
    if (holdout_column is not None or by is not None) and not evaluate:
        raise InputError("--holdout-column and --by go with --evaluate")
    if by is not None and holdout_column is None:
        raise InputError("--by goes with --holdout-column")
    if html is not None and holdout_column is not None:
        raise InputError("--html writes the page of a forecast or of --evaluate; with "
                         "--holdout-column there is none")
    axis = x or ("compute" if to_compute is not None else "step")
    curves, input_sha = open_curves(file, store, parse_mapping(mapping), metric=y,
                                    keep=[holdout_column or "", by or ""],
                                    duplicates=duplicates)
    frame = curves.frame
    if runs:
        missing = sorted(set(runs) - set(frame["run"].astype(str)))
        if missing:
            raise InputError(f"no run named {missing[0]!r} in the curves")
        frame = frame[frame["run"].astype(str).isin(runs)]
    settings = {"method": method, "x": axis, "y": y, "runs": runs or None,
                "flops_convention": "compute as given by the curves (6·N·D where derived)"}
    notes = notes_in_flags(curves.unsaid_notes())
    read = [d.to_dict() for d in curves.diagnostics]  # the reader's (the metric choice)
    if evaluate and holdout_column is not None:
        body, shown_table = _benchmark(frame, method, holdout_column, axis, y, by, reference,
                                       settings, notes, read)
    elif evaluate:
        body, shown_table = _evaluation(frame, method, axis, y, settings, notes, read, html)
    else:
        target = to_compute if to_compute is not None else to
        if schedule:
            settings["schedules"] = parse_pairs(schedule, flag="--schedule", form="RUN=SPEC")
        body, shown_table = _forecast(frame, method, target, axis, y, total_steps, runs,
                                      settings, notes, read, html, plot)
    if plot is not None and evaluate:
        notes.append("--plot draws forecasts; with --evaluate no plot is written")
    if not quiet:
        print_tables([shown_table], fmt)
        for line in [*(n if n.startswith(("warning: ", "error: ")) else f"note: {n}"
                       for n in collapse_notes(notes)),
                     *(d.line() for d in curves.diagnostics)]:
            typer.echo(line, err=True)
    if json_out is not None:
        serialise.write_report(json_out, FORMAT, body, input_sha256=input_sha,
                               seed=None, settings=settings)


def _benchmark(frame, method, holdout_column, axis, y, by, reference, settings, notes, read):
    """``--evaluate --holdout-column``: the benchmark's body and table."""
    from scalekit.surrogates import METHODS, holdout_frame

    methods = list(METHODS) if method == "all" else [method]
    table = holdout_frame(frame, methods=methods, train=holdout_column, x=axis, y=y, by=by,
                          reference=reference).table
    settings.update(holdout_column=holdout_column, by=by, reference=reference)
    body = {"groups": _groups(table, reference), "reference": reference, "notes": notes,
            "diagnostics": read}
    shown = table.rename(columns={"rmse_log": "rmse", "ratio_to_reference": "x ref",
                                  "win_rate_vs_reference": "wins", "cover50": "c50",
                                  "cover80": "c80", "cover95": "c95",
                                  "n_evaluations": "evals"})
    return body, _table(f"forecast benchmark (fit on {holdout_column} = 1, forecast the "
                        f"rest; RMSE of ln loss; ref = {reference})", shown)


def _evaluation(frame, method, axis, y, settings, notes, read, html):
    """``--evaluate``: the scores' body and table (and page)."""
    from scalekit.surrogates import METHODS, evaluate_frame

    methods = list(METHODS) if method == "all" else [method]
    scores = evaluate_frame(frame, methods=methods, x=axis, y=y)
    body = {**scores.to_dict(), "notes": notes, "diagnostics": read}
    if html is not None:
        from .report import scores_page, write_page

        write_page(html, scores_page(scores, body, settings))
    shown = scores.table[["method", "subset", "curves", "final_log_err", "tail_mape_pct",
                          "cover50", "cover80", "cover95", "ms_per_curve"]]
    return body, _table("forecast evaluation (cut at 10/20/30/50%)", shown)


def _forecast(frame, method, target, axis, y, total_steps, runs, settings, notes, read, html,
              plot):
    """``--to`` / ``--to-compute``: the forecast's body and table (and page, plot); the
    notes of runs skipped or not drawn join ``notes``."""
    from scalekit.surrogates import forecast_frame

    result = forecast_frame(frame, to=target, x=axis, y=y, method=method,
                            total_steps=total_steps, schedules=settings.get("schedules"))
    table, final = result.table, result.final
    notes += notes_in_flags(d.line() for d in result.diagnostics)
    shown = final[["run", "x", "q0.5", "q0.1", "q0.9", "q0.025", "q0.975"]].rename(
        columns={"x": axis, "q0.5": "median", "q0.1": "80% low", "q0.9": "80% high",
                 "q0.025": "95% low", "q0.975": "95% high"})
    body = {**result.to_dict(), "notes": notes}
    body["diagnostics"] = read + body["diagnostics"]
    observed = frame[["run", axis, y]].dropna()
    if html is not None:
        from .report import forecast_page, write_page

        write_page(html, forecast_page(result, body, settings, observed=observed))
    if plot is not None:
        from scalekit.report import drawn_runs, plot_forecasts

        drawn, left_out = drawn_runs(table, runs)
        notes += notes_in_flags(left_out)
        plot_forecasts(observed, table, plot, x=axis, y=y, runs=drawn)
    return body, _table(f"forecast at {axis} = {target:g} ({method})", shown)


def _multipower(files, store, *, fit_on, predict, schedule, total_steps, evaluate, y, mapping,
                free_shape, duplicates, json_out, plot, html, quiet, fmt) -> None:
    """``--method multipower``: fit the runs of --fit-on at once, forecast other schedules."""
    import hashlib

    import pandas as pd

    from scalekit import serialise
    from scalekit.errors import InputError
    from scalekit.formatting import collapse_notes, format_number
    from scalekit.surrogates import multipower_forecast

    if not fit_on:
        raise InputError("--method multipower needs --fit-on RUN,RUN,...")
    if not predict and not evaluate:
        raise InputError("--method multipower needs --predict-schedule SPEC|RUN or --evaluate")
    specs = parse_pairs(schedule, flag="--schedule", form="RUN=SPEC")
    frames, digests = [], []
    for path in (files or [None]):
        curves, digest = open_curves(path, store if path is None else None,
                                     parse_mapping(mapping), metric=y, duplicates=duplicates)
        frames.append(curves.frame)
        digests.append(digest)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        owners = {}
        for path, part in zip(files, frames, strict=True):
            for run in set(part["run"].astype(str)):
                if run in owners:
                    raise InputError(f"run {run!r} is in two files; give each run once",
                                     source=str(path))
                owners[run] = path
    result = multipower_forecast(frame, fit_on=fit_on.split(","),
                                 predict_schedule=predict, evaluate=evaluate,
                                 schedules=specs, y=y, total_steps=None if total_steps is None
                                 else dict.fromkeys(set(frame["run"].astype(str)), total_steps),
                                 **({"shape_prior": None} if free_shape else {}))
    rows = [[r["run"], format_number(r["mean_rel_error"]), format_number(r["worst_rel_error"]),
             format_number(r["r2"])] for r in result.runs]
    avg = result.averages()
    if avg:
        rows.append(["average", format_number(avg["mean_rel_error"]),
                     format_number(avg["worst_rel_error"]), format_number(avg["r2"])])
    final = result.table.groupby("schedule", sort=False).tail(1)
    tables = [_table("multipower fit on " + ", ".join(result.fit_on) + " (params: " + ", ".join(
        f"{k} {format_number(v)}" for k, v in result.params.items()) + ")",
        pd.DataFrame(rows, columns=["run", "mean rel err", "worst rel err", "R2"]))
        if rows else None,
        _table("multipower forecast at each schedule's last step",
               final[[c for c in ("schedule", "step", "lr", "q0.5", "q0.025", "q0.975")
                      if c in final]].rename(columns={"q0.5": "median", "q0.025": "95% low",
                                                      "q0.975": "95% high"}))]
    if not quiet:
        print_tables([t for t in tables if t is not None], fmt)
        for note in collapse_notes([d.message for d in result.diagnostics]):
            typer.echo(f"note: {note}", err=True)
    settings = {"method": "multipower", "fit_on": result.fit_on,
                "predict_schedule": list(predict), "evaluate": evaluate, "schedules": specs,
                "y": y, "loss": "huber", "delta": result.stats["delta"]}
    if json_out is not None:
        digest = hashlib.sha256("".join(digests).encode()).hexdigest()
        serialise.write_report(json_out, FORMAT, result, input_sha256=digest, seed=0,
                               settings=settings)
    if plot is not None or html is not None:
        from scalekit.report import plot_schedule_search

        curves = result.table.rename(columns={"q0.5": "loss"})
        figure = plot_schedule_search(curves, plot)[0].figure
        if html is not None:
            from .report import result_page, write_page

            write_page(html, result_page(result, result.to_dict(), settings,
                                         figures=[("Schedules and their predicted medians",
                                                   figure)], table=result.to_frame()))


def _groups(table, reference):
    """The benchmark table as the JSON ``groups`` list (coverage keyed by level)."""
    tag = "m4" if reference == "m4-paper" else reference
    return [{"group": row["group"], "method": row["method"], "rmse_log": row["rmse_log"],
             f"ratio_to_{tag}": row["ratio_to_reference"],
             f"win_rate_vs_{tag}": row["win_rate_vs_reference"],
             "coverage": {"0.5": row["cover50"], "0.8": row["cover80"], "0.95": row["cover95"]},
             "n_evaluations": row["n_evaluations"]} for row in table.to_dict(orient="records")]


def _table(title, table) -> dict:
    from scalekit.report import table_data

    return table_data(title, [str(c) for c in table.columns],
                      [list(row) for row in table.itertuples(index=False)])


def register(app: typer.Typer) -> None:
    """Add the ``forecast`` command to ``app``."""
    app.command("forecast")(forecast)
