"""Read learning curves from files, folders and tracking stores into a validated tidy frame.

One module per format:

- ``csv_file`` — CSV/TSV, long (one row per point) or one row per run;
- ``wandb_export`` — the wide CSV W&B exports (``Step`` and ``<run> - <metric>``);
- ``wandb_offline`` — W&B offline run folders (``wandb/offline-run-*``);
- ``jsonl_file``, ``parquet_file`` — JSON Lines and Parquet;
- ``tensorboard_logs`` — TensorBoard event files, with hparams;
- ``mlflow_tracking`` — MLflow tracking stores (URI or ``mlruns`` folder);
- ``optuna_study`` — an Optuna study's intermediate values.

The table formats go through :func:`~scalekit.curves.readers._table.tidy_from_table`,
the tracking tools through :mod:`~scalekit.curves.readers._run_records`; both
choose the metric by one rule (:mod:`~scalekit.curves.readers._metric_choice`).
The tracking tools' packages are optional extras, imported only when read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path


from scalekit.checks import check_choice, check_local_input
from scalekit.curves._curve_set import Curves
from scalekit.curves.readers._csv_file import read_csv_table
from scalekit.curves.readers._jsonl_file import read_jsonl_table
from scalekit.curves.readers._metric_choice import MetricChoice
from scalekit.curves.readers._parquet_file import read_parquet_table
from scalekit.curves.readers._run_records import frame_from_records
from scalekit.curves.readers._table import run_columns, tidy_from_table
from scalekit.curves.readers._wandb_export import looks_wide, wide_to_long
from scalekit.curves._validate import Locator
from scalekit.errors import InputError

__all__ = ["DUPLICATES", "FORMATS", "check_local_input", "read_curves"]

FORMATS = ("csv", "wandb", "jsonl", "parquet", "tensorboard", "mlflow", "optuna")
DUPLICATES = ("error", "first", "last")
_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
             ".parquet": "parquet", ".pq": "parquet", ".wandb": "wandb"}
_URI_SCHEMES = ("sqlite:", "file:", "http:", "https:", "postgresql:", "postgresql+",
                "mysql:", "mysql+", "databricks")


def read_curves(path: str | Path, *, format: str | None = None,
                mapping: Mapping[str, str] | None = None, metric: str = "loss",
                duplicates: str = "error", keep: Sequence[str] = (),
                experiment: str | None = None, study: str | None = None) -> Curves:
    """Read learning curves from ``path`` into validated :class:`~scalekit.curves.Curves`.

    Parameters
    ----------
    path : str or Path
        A file; a folder of TensorBoard event files, of W&B offline runs or an
        ``mlruns`` folder; or a tracking URI (``sqlite:///mlflow.db``,
        ``sqlite:///optuna.db``, ``file:///…/mlruns``, ``http://host:5000``).
    format : {"csv", "wandb", "jsonl", "parquet", "tensorboard", "mlflow", "optuna"}, optional
        Detected when omitted: from the suffix (and, for CSV, from
        ``<run> - <metric>`` headers), from a folder's contents, or from the
        tables of a SQLite file. ``wandb`` is the wide CSV export for a file and
        offline runs for a folder.
    mapping : mapping role -> column, optional
        Explicit column roles (``run``, ``step``, ``params``, ``tokens``,
        ``compute``, ``loss``, ``wall_time``, ``depth``, ``width``, ``classes``,
        ``k``, ``seed``), overriding alias detection. ``run`` may list several
        columns (``"model,peak_lr"``) whose values, joined by ``/``, name a run.
        For the tracking tools only ``loss`` (the series to take) applies.
    metric : str
        The metric asked for and the name of its column in the result
        (``loss`` by default). Where several names of it exist (``train/loss``,
        ``val/loss``) the validation one is taken (see
        :mod:`~scalekit.curves.readers._metric_choice`); a name with its split
        (``train/loss``) asks for that one.
    duplicates : {"error", "first", "last"}
        What a repeated (run, step) does: rejected (default) or resolved by
        keeping the first or last occurrence (the count dropped is noted).
    keep : sequence of str
        Further columns to keep as they are (numbers where every cell is one,
        else text), e.g. an x column or a grouping column for ``scalekit fit``; a name
        ending in ``?`` is kept where the table has that column and skipped otherwise
        (the names of a law expression, some of which are columns).
    experiment : str, optional
        MLflow only: read this experiment (name or id) instead of all.
    study : str, optional
        Optuna only: the study to read (needed when the storage holds several).

    Returns
    -------
    Curves
        Its ``frame`` has columns ``run``, ``step``, the metric, and what the source
        has of ``compute``, ``tokens``, ``wall_time``, ``params``, ``depth``,
        ``width``, ``classes``, ``k``, ``seed``, further metric columns and
        ``config.*`` columns (run configuration, without the prefix). Its
        ``notes`` list what was derived, chosen or ignored, ``metrics`` the metric
        columns, ``config_columns`` the configuration columns, ``metric_choice``
        which source name the metric is and ``diagnostics`` that choice's
        ``metric_choice`` diagnostic, if any.
    """
    source = str(path)
    uri = _is_uri(path)
    if not uri:
        path = check_local_input(path)
    check_choice("duplicates", duplicates, DUPLICATES)
    fmt = _detect_format(path, format, uri)
    if experiment is not None and fmt != "mlflow":
        raise InputError(f"The value of `experiment` is {experiment!r}, but only an MLflow "
                         f"store has experiments (this is read as {fmt}).", source=source)
    if study is not None and fmt != "optuna":
        raise InputError(f"The value of `study` is {study!r}, but only an Optuna storage has "
                         f"studies (this is read as {fmt}).", source=source)
    if fmt in ("tensorboard", "mlflow", "optuna") or (fmt == "wandb" and _is_run_log(path)):
        curves = _read_tracking(path, fmt, uri, source, mapping=mapping, metric=metric,
                               duplicates=duplicates, keep=keep, experiment=experiment,
                                study=study)
    else:
        curves = _read_table(path, fmt, format, source, mapping=mapping, metric=metric,
                             duplicates=duplicates, keep=keep)
    return replace(curves, source=source, format=fmt)


def _read_table(path: Path, fmt: str, format: str | None, source: str, *, mapping, metric,
                duplicates, keep) -> Curves:
    """CSV (long, per run or a W&B wide export), JSONL or Parquet."""
    choice: MetricChoice | None = None
    notes: list[str] = []
    if fmt == "parquet":
        table, lines = read_parquet_table(path), None
    elif fmt == "jsonl":
        table, lines = read_jsonl_table(path)
    else:
        table, lines = read_csv_table(path, text=lambda header: run_columns(header, mapping,
                                                                             metric))
        if fmt == "wandb" or (format is None and looks_wide(table.columns, mapping, metric)):
            table, lines, choice, notes = wide_to_long(table, lines, mapping, metric, source)
            mapping = None
    curves = tidy_from_table(table, Locator(source, lines), mapping=mapping, metric=metric,
                             duplicates=duplicates, default_run=path.stem or path.name,
                             keep=keep, choice=choice)
    return curves.noted(notes)


def _read_tracking(path: str | Path, fmt: str, uri: bool, source: str, *, mapping, metric,
                   duplicates, keep, experiment, study) -> Curves:
    """TensorBoard logs, W&B offline runs, an MLflow store or an Optuna study."""
    mapping = dict(mapping or {})
    mapped = mapping.pop("loss", mapping.pop(metric, None))
    if mapping:
        raise InputError(f"a {fmt} source takes no column mapping but the metric's "
                         f"(`mapping` {metric}=NAME); got: " + ", ".join(mapping), source=source)
    choice, what = None, "metric"
    if fmt == "tensorboard":
        from scalekit.curves.readers._tensorboard_logs import read_tensorboard_records

        records, notes = read_tensorboard_records(path)
        what = "scalar tag"
    elif fmt == "wandb":
        from scalekit.curves.readers._wandb_offline import read_wandb_records

        records, notes = read_wandb_records(path)
    elif fmt == "mlflow":
        from scalekit.curves.readers._mlflow_tracking import mlflow_uri, read_mlflow_records

        records, notes = read_mlflow_records(source if uri else mlflow_uri(path),
                                             experiment=experiment, source=source)
    else:
        from scalekit.curves.readers._optuna_study import read_optuna_records

        storage = source if uri else "sqlite:///" + str(Path(path).resolve())
        records, notes, objective = read_optuna_records(storage, study=study, source=source)
        if mapped is None:  # one series per trial: it is the curve, whatever its name
            choice = MetricChoice(metric, objective, how="named" if objective == metric
                                  else "only")
    curves = frame_from_records(records, source=source, metric=metric, mapped=mapped,
                                duplicates=duplicates, keep=keep, what=what, choice=choice)
    return curves.noted(notes)


def _is_uri(path: str | Path) -> bool:
    return isinstance(path, str) and path.lower().startswith(_URI_SCHEMES)


def _is_run_log(path: Path) -> bool:
    return path.is_dir() or path.suffix.lower() == ".wandb"


def _detect_format(path: str | Path, format: str | None, uri: bool) -> str:
    if format is not None:
        fmt = check_choice("format", format, FORMATS)
        if uri and fmt not in ("mlflow", "optuna"):
            raise InputError(f"a URI is read as mlflow or optuna, not {fmt}", source=str(path))
        return fmt
    if uri:
        text = str(path)
        if not text.lower().startswith("sqlite:"):
            return "mlflow" if text.lower().startswith(("file:", "http:", "https:",
                                                         "databricks")) else _ask(text)
        file = Path(text.split(":///", 1)[-1] if ":///" in text else text[len("sqlite:"):])
        if not file.is_file():
            raise InputError("no such SQLite file", source=text)
        return _sqlite_kind(file, text)
    if path.is_dir():
        from scalekit.curves.readers._wandb_offline import find_wandb_logs

        if (path / "meta.yaml").is_file() or any(path.glob("*/meta.yaml")):
            return "mlflow"
        if find_wandb_logs(path):
            return "wandb"
        return "tensorboard"
    if path.suffix.lower() in (".db", ".sqlite", ".sqlite3"):
        return _sqlite_kind(path, str(path))
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"cannot tell the format from the suffix {path.suffix!r}; choose one "
                         "of " + ", ".join(FORMATS) + " as `format`", source=str(path))
    return fmt


def _sqlite_kind(file: Path, source: str) -> str:
    """``mlflow`` or ``optuna``, from the tables of a SQLite file (opened read-only)."""
    try:
        con = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master "
                                                "WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a SQLite file ({exc})", source=source) from None
    if {"studies", "trials", "trial_intermediate_values"} <= tables:
        return "optuna"
    if {"experiments", "runs", "metrics", "params"} <= tables:
        return "mlflow"
    if {"runs", "points"} <= tables:
        raise InputError("this is a scalekit curve store: open it as a `store` "
                         "(scalekit.curves.CurveStore), no import needed", source=source)
    return _ask(source)


def _ask(source: str) -> str:
    raise InputError("cannot tell whether this is an MLflow store or an Optuna storage; "
                     "choose `format` 'mlflow' or 'optuna'", source=source)
