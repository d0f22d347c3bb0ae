"""Turn a raw table (cells as read from any format) into a validated tidy curve frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from scalekit.compute import tokens_for_compute
from scalekit.curves._curve_set import Curves
from scalekit.curves.readers._lr_series import find_lr_column
from scalekit.curves.readers._metric_choice import MetricChoice, choose_metric
from scalekit.curves._schema import (ALIASES, CONFIG_PREFIX, FILE_ONLY_COLUMNS, INTEGER_RUN_COLUMNS,
                                     KEY_COLUMNS, METRIC_PREFIX, POINT_COLUMNS, RUN_COLUMNS, is_metric_name,
                                     resolve_roles)
from scalekit.curves._validate import Locator, SourceLines, check_frame, to_float, to_step
from scalekit.errors import InputError


def tidy_from_table(table: pd.DataFrame, where: Locator, *, mapping: Mapping[str, str] | None,
                    metric: str, duplicates: str = "error", default_run: str = "run",
                    keep: Sequence[str] = (), choice: MetricChoice | None = None,
                    ) -> Curves:
    """Turn a raw table (cells as read) into validated :class:`~scalekit.curves.Curves`.

    The metric column is ``choice.taken`` when a choice is given, else the
    column ``mapping`` names for the metric, else the one
    :func:`~scalekit.curves.readers._metric_choice.choose_metric` picks among the
    columns. The result's ``metric_choice`` holds that choice and its ``diagnostics``
    the choice's ``metric_choice`` diagnostic.
    """
    if table.shape[1] == 0:
        raise where.error("the file is empty")
    if len(table) == 0:
        raise InputError("the file has a header but no data rows", source=where.source, line=2)
    choice, mapping = _metric(table, where, mapping, metric, choice)
    roles = resolve_roles(table.columns, mapping, metric=metric, source=where.source)
    notes: list[str] = [choice.note()] if choice.said else []
    out, metrics, config_columns, used = _columns(table, where, roles, metric, duplicates,
                                                  default_run, notes)
    keep = [c.removesuffix("?") for c in dict.fromkeys(keep)
            if not c.endswith("?") or c[:-1] in table.columns]
    for column in keep:
        if column in out:  # already a column of the frame, such as a role's
            continue
        if column not in table.columns:
            raise InputError(f"no column {column!r} to keep", source=where.source, line=1)
        out[column] = _config_values(table[column])  # also when it plays a role
        used.add(column)
    ignored = [str(c) for c in table.columns if c not in used]
    if ignored:
        notes.append("ignored columns: " + ", ".join(ignored))
    frame, where = _derived_and_deduplicated(pd.DataFrame(out), where, duplicates, notes)
    _, order = check_frame(frame, where, metrics=metrics, config=config_columns)
    for column in INTEGER_RUN_COLUMNS:
        if column in frame and not frame[column].isna().any():
            frame[column] = frame[column].astype(np.int64)
    if not np.array_equal(order, np.arange(len(order))):  # rows already in order: no copy
        frame = frame.iloc[order].reset_index(drop=True)
    lines = None if where.lines is None else SourceLines(
        frame["run"].to_numpy(), frame["step"].to_numpy(), where.lines[order])
    ordered = _ordered(frame.columns, metrics, config_columns)
    frame = frame[ordered + [c for c in keep if c not in ordered]]
    return Curves(frame, metric=metric, metrics=tuple(metrics),
                  config_columns=tuple(config_columns), notes=tuple(notes),
                  diagnostics=tuple(choice.diagnostics()), metric_choice=choice,
                  source=where.source, source_lines=lines)


def _metric(table, where, mapping, metric, choice) -> tuple[MetricChoice, dict]:
    """The metric choice (given, mapped or chosen among the columns) and the role mapping
    with the metric's column in it."""
    mapping = dict(mapping or {})
    if choice is None:
        mapped = mapping.pop("loss", mapping.pop(metric, None))
        if mapped is not None:  # a column the file lacks: the mapping's own error
            resolve_roles(table.columns, {"loss": mapped}, metric=metric, source=where.source)
        choice = choose_metric(table.columns, metric, mapped=mapped, source=where.source)
    if choice is None:
        looked = (metric,) + (ALIASES["loss"][1:] if metric == "loss" else ())
        raise InputError(f"missing required column: no {metric!r} column (looked for "
                         + ", ".join(looked) + f" and names such as train/{metric} or "
                         f"eval_{metric}); name one with `mapping` {metric}=COLUMN",
                         source=where.source, line=1)
    if choice.how == "named" and choice.others:  # a copy of the curve is no rival to it
        copies = {o for o in choice.others if o in table.columns
                  and table[o].astype(str).equals(table[choice.taken].astype(str))}
        choice = replace(choice, others=tuple(o for o in choice.others if o not in copies))
    mapping["loss"] = choice.taken
    return choice, mapping


def _columns(table, where, roles, metric, duplicates, default_run, notes):
    """The checked columns of the tidy frame by name, its metric and configuration columns,
    and the table's columns used."""
    out: dict[str, object] = {"run": _run_names(table, roles, where, default_run, notes)}
    out["step"] = _steps(table, roles, where, out["run"], duplicates)
    for role in ("compute", "tokens", "wall_time"):
        if role in roles:
            out[role] = to_float(table[roles[role]].to_numpy(), roles[role], where,
                                 missing="nan")
    out[metric] = to_float(table[roles["loss"]].to_numpy(), roles["loss"], where)
    metrics = [metric]
    used = {c for value in roles.values() for c in _columns_of(value)}
    lr_column = _lr_column(table.columns, used)
    if lr_column is not None:
        out["lr"] = to_float(table[lr_column].to_numpy(), lr_column, where, missing="nan")
        used.add(lr_column)
    for column in table.columns:
        text = str(column)
        name = text[len(METRIC_PREFIX):] if text.startswith(METRIC_PREFIX) else text
        if column not in used and not text.startswith(CONFIG_PREFIX) and name not in out \
                and (name != text or is_metric_name(column)):
            out[name] = to_float(table[column].to_numpy(), column, where, missing="nan")
            metrics.append(name)
            used.add(column)
    for role in ("params", *FILE_ONLY_COLUMNS, *INTEGER_RUN_COLUMNS):
        if role in roles:
            out[role] = to_float(table[roles[role]].to_numpy(), roles[role], where,
                                 missing="nan")
    config_columns = []
    for column in table.columns:
        name = str(column)[len(CONFIG_PREFIX):]
        if str(column).startswith(CONFIG_PREFIX) and name not in out:
            if name in (*POINT_COLUMNS, *RUN_COLUMNS):  # config.seed: the seed, checked as such
                out[name] = to_float(table[column].to_numpy(), column, where, missing="nan")
            else:
                out[name] = _config_values(table[column])
                config_columns.append(name)
            used.add(column)
    return out, metrics, config_columns, used


def _derived_and_deduplicated(frame, where, duplicates, notes):
    """``frame`` with tokens derived where it can be, and a repeated (run, step) resolved
    under the ``duplicates`` rule (with the locator of the rows kept)."""
    if "tokens" not in frame and "compute" in frame and "params" in frame:
        frame["tokens"] = tokens_for_compute(frame["compute"], frame["params"])
        notes.append("tokens derived as compute / (6 * params)")
    if duplicates != "error":
        rows = frame.drop_duplicates(list(KEY_COLUMNS), keep=duplicates).index.to_numpy()
        if len(rows) < len(frame):
            notes.append(f"dropped {len(frame) - len(rows)} rows repeating a (run, step), "
                         f"keeping the {duplicates}")
            frame = frame.iloc[rows].reset_index(drop=True)
            where = where.subset(rows)
    return frame, where


def _lr_column(columns, used) -> str | None:
    """The learning-rate series among the columns (a tracker's series carries the metric
    prefix; a configured rate, ``config.lr``, is no series)."""
    names = {str(c)[len(METRIC_PREFIX):] if str(c).startswith(METRIC_PREFIX) else str(c): c
             for c in columns if c not in used and not str(c).startswith(CONFIG_PREFIX)}
    found = find_lr_column(names)
    return None if found is None else names[found]


def run_columns(columns: Sequence[str], mapping: Mapping[str, str] | None,
                metric: str) -> tuple[str, ...]:
    """The columns that name runs, by the mapping's ``run`` or an alias (none where the
    mapping is wrong: the full check says so later)."""
    try:
        roles = resolve_roles(columns, {k: v for k, v in (mapping or {}).items() if k == "run"},
                              metric=metric)
    except InputError:
        return ()
    return _columns_of(roles["run"]) if "run" in roles else ()


def _columns_of(role_value: str | tuple[str, ...]) -> tuple[str, ...]:
    return role_value if isinstance(role_value, tuple) else (role_value,)


def _run_names(table: pd.DataFrame, roles: dict, where: Locator, default_run: str,
               notes: list[str]) -> np.ndarray:
    """Run name of every row: the run column(s) joined by ``/``, the file's name, or one run
    per row (named ``<file>:<line>``) when there is neither a run nor a step column."""
    if "run" in roles:
        names = None
        for column in _columns_of(roles["run"]):
            text = table[column].astype(str).str.strip()
            empty = table[column].isna() | (text == "")
            if empty.any():
                raise where.error("the run name is missing", int(np.flatnonzero(empty)[0]),
                                  column)
            names = text if names is None else names + "/" + text
        codes, uniques = pd.factorize(names)  # one text object per run, not one per row
        return np.asarray(uniques, dtype=object)[codes]
    if "step" in roles:
        notes.append(f"no run column: all rows are one run named {default_run!r}")
        return np.full(len(table), default_run, dtype=object)
    notes.append(f"no run or step column: each row is its own run, named "
                 f"'{default_run}:<{'line' if where.lines is not None else 'row'}>'")
    return np.array([f"{default_run}:{where.number(i)}" for i in range(len(table))],
                    dtype=object)


def _steps(table: pd.DataFrame, roles: dict, where: Locator, runs: np.ndarray,
           duplicates: str) -> np.ndarray:
    """The step column, or step 0 for files with one row per run."""
    if "step" in roles:
        return to_step(table[roles["step"]].to_numpy(), roles["step"], where)
    repeated = pd.Series(runs).duplicated().to_numpy()
    if repeated.any() and duplicates == "error":
        row = int(np.flatnonzero(repeated)[0])
        raise where.error(f"run {runs[row]!r} has several rows but the file has no step "
                          "column; name one with `mapping` step=COLUMN, or name the columns "
                          "that together identify a run with `mapping` run=COL1,COL2", row,
                          ",".join(_columns_of(roles["run"])))
    return np.zeros(len(table), dtype=np.int64)


def _ordered(columns, metrics: list[str], config: list[str]) -> list[str]:
    head = [c for c in ("run", "step", "compute", "tokens") if c in columns]
    tail = [c for c in ("lr", "wall_time", "params", "depth", "width", "classes", "k", "seed",
                        *FILE_ONLY_COLUMNS) if c in columns and c not in config]
    return head + metrics + tail + config


def _config_values(column: pd.Series) -> np.ndarray:
    """Configuration cells: numbers where every present cell is one, else text."""
    values = [v.tolist() if isinstance(v, np.ndarray) else v  # Parquet lists
              for v in column.to_numpy(dtype=object)]
    present = [v for v in values if not is_blank(v)]
    try:
        if all(np.isfinite([float(v) for v in present])):
            return np.array([np.nan if is_blank(v) else float(v) for v in values])
    except (TypeError, ValueError):
        pass
    out = np.empty(len(values), dtype=object)  # 1-d also when cells are lists (np.array nests)
    out[:] = [None if is_blank(v) else v for v in values]
    return out


def is_blank(value: object) -> bool:
    """Whether a cell holds no value: None, NaN or blank text."""
    return value is None or (isinstance(value, float) and np.isnan(value)) or (
        isinstance(value, str) and value.strip() == "")
