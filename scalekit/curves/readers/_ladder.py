"""A model ladder: one evaluation file per run plus a table of run attributes.

The layout of OLMo's ladder (Bhagia et al. 2024, allenai/OLMo-ladder), Pythia's and
many W&B exports: each run's checkpoints are rows of its own CSV, and a small table
says what each run is. The table is a CSV (columns ``file`` or ``run``, ``params``,
optional ``tokens``, ``flops_per_token``) or JSON: either a list of such records or
OLMo's ``configs/final.json`` as it stands (``{size: {"paths": [...], "n": N,
"flops": F, "mode": "train"|"eval", ...}}``), whose entries are matched to the
given files by file name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.checks import check_local_input
from scalekit.curves._curve_set import Curves
from scalekit.errors import InputError

#: Columns giving the tokens seen at a checkpoint, in order of preference.
TOKEN_COLUMNS = ("throughput/total_tokens", "tokens")
#: Step and batch-size columns giving the tokens as their product when no token column exists.
STEP_COLUMNS = ("_step", "step")
BATCH_TOKEN_COLUMN = "batch_size_in_tokens"


@dataclass(frozen=True)
class LadderRun:
    """One run of a ladder: its name, size, checkpoints' tokens and evaluations.

    Attributes
    ----------
    name : str
        The file's stem (``190M-1xC``).
    params : float
        Parameter count N.
    tokens : ndarray
        Tokens seen at each checkpoint, in file order.
    table : DataFrame
        The file's columns, one row per checkpoint.
    source : str
        The file read.
    attributes : dict
        Further attributes from the run table (``flops_per_token``, ``mode``, ``size``).
    """

    name: str
    params: float
    tokens: np.ndarray
    table: pd.DataFrame
    source: str
    attributes: dict = field(default_factory=dict)


def read_run_attributes(path: str | Path) -> dict[str, dict]:
    """Run attributes by file name (``190M-1xC.csv``) from a CSV or JSON run table."""
    from scalekit.serialise import read_json

    path = Path(path)
    if not path.exists():
        raise InputError(f"the run table {str(path)!r} does not exist", source=str(path))
    if path.suffix.lower() == ".json":
        records = _json_records(read_json(path, what="run table (JSON)"), path)
    else:
        records = _read_table(path, "run table").to_dict("records")
    table = {}
    for line, record in enumerate(records, start=2):
        key = record.get("file", record.get("run"))
        if key is None or "params" not in record:
            raise InputError("each run needs a `file` (or `run`) and `params`",
                             source=str(path), line=line)
        params = _number(record["params"])
        if not (math.isfinite(params) and params > 0):
            raise InputError(f"the run's `params` is {record['params']!r}, but must be a "
                             "positive number", source=str(path), line=line, column="params")
        table[Path(str(key)).name] = {k: v for k, v in record.items() if k not in ("file", "run")}
        table[Path(str(key)).name]["params"] = params
    return table


def _number(value) -> float:
    """``value`` as a float; NaN where it is no number (text, a list, a boolean)."""
    if isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _read_table(path: Path, what: str) -> pd.DataFrame:
    """The CSV at ``path`` (the run table or a run's evaluation file, ``what``), refused in
    one line where it is not a regular file, not UTF-8 CSV text, or empty."""
    path = check_local_input(path)
    if path.is_dir():
        raise InputError(f"is a folder, but the {what} must be a CSV file", source=str(path))
    try:
        table = pd.read_csv(path, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise InputError(f"the {what} is empty", source=str(path)) from None
    except UnicodeDecodeError:
        raise InputError(f"the {what} is not UTF-8 text (save it as UTF-8)",
                         source=str(path)) from None
    except (pd.errors.ParserError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"the {what} is not a CSV table ({reason})", source=str(path)) from None
    if table.empty:
        raise InputError(f"the {what} has a header but no rows", source=str(path))
    return table


def _json_records(data, path: Path) -> list[dict]:
    if isinstance(data, list) and all(isinstance(record, dict) for record in data):
        return data
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "paths" in v
                                               for v in data.values()):
        missing = [size for size, entry in data.items() if "n" not in entry]
        if missing or not all(isinstance(v["paths"], list) for v in data.values()):
            raise InputError(f"the OLMo ladder config's entry {(missing or list(data))[0]!r} "
                             "needs `paths` (a list of files) and `n` (its parameter count)",
                             source=str(path))
        return [{"file": file, "params": entry["n"], "flops_per_token": entry.get("flops"),
                 "mode": entry.get("mode"), "size": size}
                for size, entry in data.items() for file in entry["paths"]]
    raise InputError("the run table must be a list of runs (objects with `file` and `params`) "
                     "or an OLMo ladder config ({size: {paths, n, flops}})", source=str(path))


def read_ladder(files, runs: str | Path) -> list[LadderRun]:
    """Read each file as one run, its attributes from the run table ``runs``.

    Raises
    ------
    InputError
        A file the table does not name, or one without a token or step column.
    """
    attributes = read_run_attributes(runs)
    ladder = []
    for file in files:
        file = Path(file)
        if file.name not in attributes:
            raise InputError(f"the run table {str(runs)!r} names no run for file {file.name!r}; "
                             "add it (matched by file name)", source=str(file))
        table = _read_table(file, "evaluation file")
        attrs = dict(attributes[file.name])
        ladder.append(LadderRun(name=file.stem, params=float(attrs.pop("params")),
                                tokens=_tokens(table, file), table=table, source=str(file),
                                attributes=attrs))
    return ladder


def _tokens(table: pd.DataFrame, file: Path) -> np.ndarray:
    for column in TOKEN_COLUMNS:
        if column in table:
            return _numbers(table, [column], file)[0]
    for column in STEP_COLUMNS:
        if column in table and BATCH_TOKEN_COLUMN in table:
            step, batch = _numbers(table, [column, BATCH_TOKEN_COLUMN], file)
            return step * batch
    raise InputError("the file has no token column (" + ", ".join(TOKEN_COLUMNS) + ") and no "
                     f"step with {BATCH_TOKEN_COLUMN!r}", source=str(file), line=1)


def _numbers(table: pd.DataFrame, columns: list[str], file: Path) -> list[np.ndarray]:
    """The ``columns`` of ``table`` as floats; a cell that is no number is refused, naming
    its line (the header is line 1)."""
    out = []
    for column in columns:
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(np.isnan(values) & table[column].notna().to_numpy())
        if bad.size:
            raise InputError(f"the value {table[column].iloc[bad[0]]!r} is not a number",
                             source=str(file), line=int(bad[0]) + 2, column=column)
        out.append(values)
    return out


def ladder_frame(runs: list[LadderRun]) -> Curves:
    """The runs as one tidy curve frame: ``run``, ``step``, ``tokens``, ``params``, the run
    table's other attributes (configuration) and every other numeric column of the files
    as a metric (the curves' ``metrics``), for the store.

    The step is the file's ``_step`` (or ``step``), else the checkpoint's ordinal (noted).
    """
    parts, metrics, notes = [], [], []
    for run in runs:
        table = run.table
        step_column = next((c for c in STEP_COLUMNS if c in table), None)
        if step_column is None:
            notes.append(f"{run.name}: no step column; checkpoints numbered 1, 2, …")
            steps = np.arange(1, len(table) + 1)
        else:
            steps = table[step_column].to_numpy()
        skip = {step_column, BATCH_TOKEN_COLUMN, *TOKEN_COLUMNS}
        columns = [c for c in table.columns if c not in skip
                   and pd.api.types.is_numeric_dtype(table[c])]
        metrics += [c for c in columns if c not in metrics]
        part = pd.DataFrame({"run": run.name, "step": steps, "tokens": run.tokens,
                             "params": run.params,
                             **{k: v for k, v in run.attributes.items() if v is not None}})
        parts.append(pd.concat([part, table[columns].reset_index(drop=True)], axis=1))
    return Curves(pd.concat(parts, ignore_index=True), metrics=tuple(metrics),
                  notes=tuple(notes))


def ladder_from_store(store, columns) -> list[LadderRun]:
    """The runs of ``store`` (a :class:`~scalekit.curves._store.CurveStore` holding a ladder
    imported by ``scalekit store import FILES --runs TABLE``) as :class:`LadderRun`, their
    tables holding the metrics ``columns`` by checkpoint (ordered by step)."""
    listed = store.runs()
    if listed.empty:
        raise InputError("the store holds no runs; import the ladder's evaluation files with "
                         "their run table first")
    missing = [c for c in columns if not any(c in m for m in listed["metrics"])]
    if missing:
        raise InputError(f"the store has no metric {missing[0]!r}; import the ladder's "
                         "evaluation files with their run table")
    tables = {}
    for column in columns:
        curves = store.curves(metric=column).frame
        for name, part in curves.groupby("run", sort=False):
            tables.setdefault(name, []).append(part.set_index("step")[[column, "tokens"]]
                                               .rename(columns={"tokens": f"tokens:{column}"}))
    runs = []
    for row in listed.itertuples():
        if row.run not in tables:
            continue
        table = pd.concat(tables[row.run], axis=1).sort_index()
        tokens = table.filter(like="tokens:").bfill(axis=1).iloc[:, 0].to_numpy(float)
        runs.append(LadderRun(name=row.run, params=float(row.params), tokens=tokens,
                              table=table[list(columns)].reset_index(drop=True),
                              source=f"store run {row.run}", attributes=dict(row.config)))
    return runs
