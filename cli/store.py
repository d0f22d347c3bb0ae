"""``scalekit store``: import curves into the store (a SQLite file or PostgreSQL), list, show,
export, remove runs, copy a store between back ends."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import (check_writable, checked_inputs, checked_sources, choice_option,
                     format_option, is_server_url,
                     library_choices, notes_in_flags, parse_mapping, print_tables,
                     store_location, store_option)
from .options import map_option, quiet_option

store_app = typer.Typer(name="store", help="Keep learning curves in a store: a SQLite file or "
                        "a PostgreSQL database (import, ls, show, export, rm, copy).",
                        no_args_is_help=True)


@store_app.command("import")
def import_(
    sources: list[str] = typer.Argument(..., metavar="SOURCE",
                                        callback=checked_sources,
                                        help="Curve files (CSV, "
                                        "W&B CSV, JSONL, Parquet), folders (TensorBoard logs, "
                                        "W&B offline runs, an mlruns folder) or tracking URIs "
                                        "(sqlite:///mlflow.db, sqlite:///optuna.db)."),
    store: Path = store_option(writes=True),
    mapping: list[str] = map_option("run=a,b, which joins several columns"),
    format: str | None = choice_option(None, "--format",
                                          library_choices("scalekit.curves", "FORMATS"),
                                          "csv, wandb, jsonl, "
                                          "parquet, tensorboard, mlflow or optuna (default: "
                                          "from the suffix, the folder or the SQLite tables)."),
    metric: str = typer.Option("loss", "--metric", help="The metric to take; where several "
                               "names of it exist (train/loss, val/loss) the validation one "
                               "is taken, and a name with its split (train/loss) takes that."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow: read only "
                                             "this experiment (name or id)."),
    study: str | None = typer.Option(None, "--study", help="Optuna: the study to read."),
    duplicates: str = choice_option("error", "--duplicates",
                                    library_choices("scalekit.curves", "DUPLICATES"),
                                    "A repeated (run, step): error, or keep the first or last."),
    runs: Path | None = typer.Option(None, "--runs", callback=checked_inputs, is_eager=True,
                                     help="Run table (CSV or JSON; OLMo's "
                                          "final.json as it stands): each SOURCE is one run's "
                                          "file, its attributes matched by file name."),
    quiet: bool = quiet_option(),
) -> None:
    """Import curves in one transaction: every row of every source, or nothing."""
    from scalekit.curves import CurveStore, read_curves
    from scalekit.formatting import collapse_notes

    roles = parse_mapping(mapping)
    if runs is not None:  # a ladder: one file per run, read together as one source
        from scalekit.curves import ladder_frame, read_ladder

        frames = [ladder_frame(read_ladder(sources, runs))]
        sources = [str(runs)]
    else:
        frames = [read_curves(source, format=format, mapping=roles, metric=metric,
                              duplicates=duplicates, experiment=experiment, study=study)
                  for source in sources]
    with CurveStore(store) as opened, opened.transaction():
        summaries = [opened.import_frame(frame, source=str(source))
                     for source, frame in zip(sources, frames, strict=True)]
    if quiet:
        return
    for source, frame, summary in zip(sources, frames, summaries, strict=True):
        typer.echo(f"{source}: imported {summary.rows or 0} rows of {summary.runs} runs into "
                   f"{display(store)} ({summary.points} points: one per row and metric)")
        for note in collapse_notes(notes_in_flags(frame.unsaid_notes())):
            typer.echo(f"  note: {note}")
        for diagnostic in frame.diagnostics:
            typer.echo(f"  {diagnostic.line()}")


@store_app.command("ls")
def ls(store: Path = store_option(), fmt: str = format_option()) -> None:
    """List the runs: name, source, size, tokens, rows, points and metrics."""
    from scalekit.curves import CurveStore
    from scalekit.report import table_data

    with CurveStore(store, create=False) as opened:
        runs = opened.runs()
    rows = [[row.run, row.source, _whole(row.params), _whole(row.tokens), int(row.rows),
             int(row.points), ", ".join(row.metrics)] for row in runs.itertuples()]
    print_tables([table_data(f"{len(runs)} runs in {display(store)}",
                             ["run", "source", "params", "tokens", "rows", "points", "metrics"],
                             rows)], fmt)


@store_app.command("show")
def show(
    run: str = typer.Argument(..., help="Run name."),
    store: Path = store_option(),
    metric: str = typer.Option("loss", "--metric", help="Metric to show."),
    limit: int = typer.Option(20, "--limit", help="Show at most this many points (evenly "
                              "spread, first and last included); 0 shows all."),
    fmt: str = format_option(),
) -> None:
    """Show one run: its attributes and its curve."""
    from scalekit.checks import check_number
    from scalekit.curves import CurveStore
    from scalekit.formatting import format_number
    from scalekit.report import table_data

    check_number("limit", limit, low=0, integer=True)
    with CurveStore(store, create=False) as opened:
        runs = opened.runs()
        frame = opened.curves(runs=[run], metric=metric).frame
    info = runs.loc[runs["run"] == run].iloc[0]
    if metric not in info["metrics"]:
        from scalekit.checks import fail

        raise fail("--metric", metric, f"a metric of run {run!r}: "
                   + ", ".join(repr(m) for m in info["metrics"]))
    header = [f"run {run} (source {info['source']}): {info['points']} points, metrics "
              + ", ".join(info["metrics"])]
    attrs = {k: info[k] for k in ("params", "tokens", "depth", "width", "classes", "k", "seed")
             if info[k] == info[k] and info[k] is not None}
    attrs.update(info["config"])
    if attrs:
        header.append("  " + ", ".join(f"{k}={format_number(_whole(v), 6)}"
                                       for k, v in attrs.items()))
    if frame.empty:
        for line in header + [f"  no {metric!r} points"]:
            typer.echo(line)
        return
    if limit and len(frame) > limit:
        import numpy as np

        frame = frame.iloc[np.unique(np.linspace(0, len(frame) - 1, limit).round().astype(int))]
    columns = [c for c in ("step", "compute", "tokens", metric, "wall_time") if c in frame]
    rows = [[_whole(v) for v in values] for values in frame[columns].itertuples(index=False)]
    print_tables([table_data("", columns, rows, digits=6)], fmt, header=header)


@store_app.command("export")
def export(
    out: Path = typer.Argument(..., callback=lambda out: check_writable(out, "OUT") or out,
                               help="Output file: .csv, .parquet or .jsonl."),
    store: Path = store_option(),
    format: str | None = choice_option(None, "--format",
                                          library_choices("scalekit.curves",
                                                          "TABLE_FORMATS"),
                                          "csv, parquet or jsonl (default: from the suffix)."),
) -> None:
    """Export every run, all metrics side by side; re-importing gives the same curves."""
    from scalekit.curves import CurveStore
    from scalekit.curves import output_format

    output_format(out, format)  # a suffix of another format: refused before the store opens
    with CurveStore(store, create=False) as opened:
        rows = opened.export(out, format=format)
    typer.echo(f"wrote {rows} rows to {out}")


@store_app.command("rm")
def rm(
    runs: list[str] = typer.Argument(..., help="Run names."),
    store: Path = store_option(writes=True),
) -> None:
    """Remove runs and their points (all named runs, or none if one is unknown)."""
    from scalekit.curves import CurveStore

    with CurveStore(store, create=False) as opened:
        removed = opened.remove(runs)
    typer.echo(f"removed {removed} runs from {display(store)}")


@store_app.command("copy")
def copy(
    source: str = typer.Argument(..., metavar="SRC", parser=store_location,
                                 help="The store to copy: a SQLite file or postgresql://…"),
    destination: str = typer.Argument(..., metavar="DST", parser=store_location,
                                      help="A new or empty store: a SQLite file or "
                                      "postgresql://user@host/db."),
) -> None:
    """Copy a whole store (runs, points, allocations) into a new one, between back ends;
    exporting either writes the same file."""
    from scalekit.curves import copy_store

    if not is_server_url(destination):
        check_writable(destination, "DST")
    summary = copy_store(source, destination)
    typer.echo(f"copied {summary.points} points of {summary.runs} runs from {display(source)} to "
               f"{display(destination)}")


def display(store) -> str:
    """A store's location as printed: a URL's password as ``***``."""
    from scalekit.curves import display as shown

    return shown(store)


def _whole(value: object) -> object:
    """A float that holds a whole number (a size, a step) as an int; other values as they are."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


def register(app: typer.Typer) -> None:
    """Add the ``store`` command group to ``app``."""
    app.add_typer(store_app)
