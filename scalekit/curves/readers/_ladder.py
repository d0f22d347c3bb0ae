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

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

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
    path = Path(path)
    if not path.is_file():
        raise InputError(f"the run table {str(path)!r} does not exist", source=str(path))
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise InputError(f"the run table is not valid JSON ({error.msg})", source=str(path),
                             line=error.lineno) from None
        records = _json_records(data, path)
    else:
        records = pd.read_csv(path).to_dict("records")
    table = {}
    for line, record in enumerate(records, start=2):
        key = record.get("file", record.get("run"))
        if key is None or "params" not in record:
            raise InputError("each run needs a `file` (or `run`) and `params`",
                             source=str(path), line=line)
        table[Path(str(key)).name] = {k: v for k, v in record.items() if k not in ("file", "run")}
    return table


def _json_records(data, path: Path) -> list[dict]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and all(isinstance(v, dict) and "paths" in v for v in data.values()):
        return [{"file": file, "params": entry["n"], "flops_per_token": entry.get("flops"),
                 "mode": entry.get("mode"), "size": size}
                for size, entry in data.items() for file in entry["paths"]]
    raise InputError("the run table must be a list of runs or an OLMo ladder config "
                     "({size: {paths, n, flops}})", source=str(path))


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
        table = pd.read_csv(file)
        attrs = dict(attributes[file.name])
        ladder.append(LadderRun(name=file.stem, params=float(attrs.pop("params")),
                                tokens=_tokens(table, file), table=table, source=str(file),
                                attributes=attrs))
    return ladder


def _tokens(table: pd.DataFrame, file: Path) -> np.ndarray:
    for column in TOKEN_COLUMNS:
        if column in table:
            return table[column].to_numpy(dtype=float)
    for column in STEP_COLUMNS:
        if column in table and BATCH_TOKEN_COLUMN in table:
            return (table[column] * table[BATCH_TOKEN_COLUMN]).to_numpy(dtype=float)
    raise InputError("the file has no token column (" + ", ".join(TOKEN_COLUMNS) + ") and no "
                     f"step with {BATCH_TOKEN_COLUMN!r}", source=str(file), line=1)


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
