"""Write a tidy curve frame in any format that :func:`read_curves` reads back.

CSV, JSONL and Parquet keep every float bit (shortest round-trip text for the
text formats). The W&B wide CSV carries one metric; TensorBoard event files
store values as float32, as TensorBoard itself does.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.checks import check_choice
from scalekit.curves._curve_set import Curves
from scalekit.curves.readers._csv_file import escape_cell
from scalekit.curves._schema import CONFIG_PREFIX, METRIC_PREFIX, is_metric_name
from scalekit.errors import InputError
from scalekit.serialise import atomic_output

WRITE_FORMATS = ("csv", "wandb", "jsonl", "parquet", "tensorboard")
#: The formats that carry every metric side by side (what a store exports).
TABLE_FORMATS = ("csv", "jsonl", "parquet")
_SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet",
             ".pq": "parquet"}


def output_format(path: str | Path, format: str | None = None) -> str:
    """The format :func:`write_curves` writes ``path`` in: ``format``, or the suffix's; a
    suffix that names another format than ``format`` is refused (a ``.parquet`` file of
    CSV text would mislead every reader)."""
    path = Path(path)
    suffix_format = _SUFFIXES.get(path.suffix.lower())
    if format is None:
        if suffix_format is None:
            raise InputError(f"cannot tell the format from the suffix {path.suffix!r}; "
                             "use .csv, .jsonl or .parquet", source=str(path))
        return suffix_format
    check_choice("format", format, WRITE_FORMATS)
    if suffix_format is not None and suffix_format != {"wandb": "csv"}.get(format, format):
        raise InputError(f"the suffix {path.suffix!r} names {suffix_format}, but `format` is "
                         f"{format!r}: give the file the suffix of its format", source=str(path))
    return format


def write_curves(frame: Curves | pd.DataFrame, path: str | Path, *, format: str | None = None,
                 metric: str = "loss") -> Path:
    """Write curves (or a tidy curve frame) to ``path`` and return the path.

    Parameters
    ----------
    frame : Curves or DataFrame
        The curves. Their ``config_columns`` are written as ``config.<name>``,
        and their ``metrics`` whose names do not read as metrics (such as
        ``samples``) as ``metric.<name>``, so that reading restores them.
    path : str or Path
        Target file (a folder for ``tensorboard``: one sub-folder per run).
    format : {"csv", "wandb", "jsonl", "parquet", "tensorboard"}, optional
        Taken from the suffix when omitted.
    metric : str
        The metric written by the one-metric formats (``wandb``, ``tensorboard``).
    """
    path = Path(path)
    format = output_format(path, format)
    curves = Curves.of(frame)
    frame = curves.frame
    config = [c for c in curves.config_columns if c in frame]
    hidden = [m for m in curves.metrics if m in frame and not is_metric_name(m)
              and format in TABLE_FORMATS]
    frame = frame.rename(columns={**{c: CONFIG_PREFIX + c for c in config},
                                  **{m: METRIC_PREFIX + m for m in hidden}})
    if format in ("wandb", "tensorboard") and metric not in frame:
        raise InputError(f"the frame has no {metric!r} column to write", source=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "tensorboard":             # a folder of event files
        _write_tensorboard(frame, path, metric)
        return path
    with atomic_output(path) as temporary:  # whole or not at all
        if format == "csv":
            _escaped(frame).to_csv(temporary, index=False)
        elif format == "parquet":
            frame.to_parquet(temporary, index=False)
        elif format == "jsonl":
            _write_jsonl(frame, temporary)
        else:
            _write_wandb(frame, temporary, metric)
    return path


def _escaped(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name a spreadsheet would run as a formula
    escaped (:func:`~scalekit.curves.readers._csv_file.escape_cell`)."""
    out = frame.rename(columns=lambda c: escape_cell(str(c)))
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(lambda v: escape_cell(v) if isinstance(v, str) else v)
    return out


def _write_jsonl(frame: pd.DataFrame, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for record in frame.to_dict("records"):
            clean = {}
            for key, value in record.items():
                if isinstance(value, np.generic):
                    value = value.item()
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                clean[str(key)] = value
            out.write(json.dumps(clean, allow_nan=False) + "\n")


def _write_wandb(frame: pd.DataFrame, path: Path, metric: str) -> None:
    """``Step`` plus ``<run> - <metric>`` and its ``__MIN``/``__MAX`` shadows, runs in order."""
    wide = frame.pivot(index="step", columns="run", values=metric)
    runs = list(dict.fromkeys(frame["run"]))
    out = pd.DataFrame({"Step": wide.index.to_numpy()})
    for run in runs:
        values = wide[run].to_numpy()
        for suffix in ("", "__MIN", "__MAX"):
            out[escape_cell(f"{run} - {metric}{suffix}")] = values
    out.to_csv(path, index=False)


def _write_tensorboard(frame: pd.DataFrame, path: Path, metric: str) -> None:
    """One sub-folder per run holding an event file with the metric (and compute/tokens)."""
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("writing TensorBoard files needs the optional package 'tensorboard'",
                         source=str(path)) from None
    tags = [metric] + [c for c in ("compute", "tokens") if c in frame]
    now = time.time()
    for run, rows in frame.groupby("run", sort=False):
        writer = EventFileWriter(str(path / str(run)))
        rows = rows.sort_values("step")
        walls = rows["wall_time"].to_numpy() if "wall_time" in rows else np.full(len(rows), now)
        for i, step in enumerate(rows["step"].to_numpy()):
            values = [Summary.Value(tag=tag, simple_value=float(rows[tag].iloc[i]))
                      for tag in tags if not math.isnan(float(rows[tag].iloc[i]))]
            writer.add_event(Event(wall_time=float(walls[i]), step=int(step),
                                   summary=Summary(value=values)))
        writer.close()
