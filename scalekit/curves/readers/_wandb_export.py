"""W&B wide CSV exports: a ``Step`` column and ``<run> - <metric>`` columns.

The ``__MIN``/``__MAX`` shadow columns are ignored. Which metric is the curve's
follows :mod:`scalekit.curves.readers._metric_choice`, once for all runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from scalekit.curves.readers._metric_choice import MetricChoice, choose_metric
from scalekit.curves.readers._table import is_blank
from scalekit.curves._schema import resolve_roles, series_role
from scalekit.errors import InputError

_WIDE_COLUMN = re.compile(r"^(?P<run>.+) - (?P<metric>.+)$")


def looks_wide(columns, mapping: Mapping[str, str] | None, metric: str) -> bool:
    """A W&B export: no metric column (by name or mapping) but ``<run> - <metric>`` columns."""
    mapped = dict(mapping or {}).get("loss", dict(mapping or {}).get(metric))
    wide = [c for c in columns if _WIDE_COLUMN.match(str(c))]
    plain = [c for c in columns if c not in wide]  # "val - loss" is run "val"'s loss
    return bool(wide) and mapped not in set(columns) and choose_metric(plain, metric) is None


def wide_to_long(table: pd.DataFrame, lines: np.ndarray, mapping: Mapping[str, str] | None,
                 metric: str, source: str,
                 ) -> tuple[pd.DataFrame, np.ndarray, MetricChoice, list[str]]:
    """Turn ``Step`` + ``<run> - <metric>`` columns into long rows (run, step, metric, …).

    Returns the long table, the file line of each row, the metric choice and notes.
    """
    mapping = dict(mapping or {})
    wanted = mapping.pop("loss", mapping.pop(metric, None))
    step_roles = resolve_roles(table.columns, {k: v for k, v in mapping.items() if k == "step"},
                               metric=metric, source=source)
    if "step" not in step_roles:
        raise InputError("missing required column: a W&B export needs a 'Step' column",
                         source=source, line=1)
    per_run: dict[str, dict[str, str]] = {}
    for column in table.columns:
        match = _WIDE_COLUMN.match(str(column))
        if match is None or str(column).endswith(("__MIN", "__MAX")):
            continue
        per_run.setdefault(match["run"], {})[match["metric"]] = column
    names = [n for columns in per_run.values() for n in columns if series_role(n) is None]
    choice = choose_metric(names, metric, mapped=wanted, source=source)
    if choice is None:
        raise InputError(f"missing required column: no '<run> - {metric}' column in the W&B "
                         "export", source=source, line=1)
    pieces, piece_lines, without = [], [], []
    step = table[step_roles["step"]].to_numpy(dtype=object)
    for run, columns in per_run.items():
        if choice.taken not in columns:
            without.append(run)
            continue
        values = table[columns[choice.taken]].to_numpy(dtype=object)
        present = np.array([not is_blank(v) for v in values])
        piece = {"run": np.full(present.sum(), run, dtype=object), "step": step[present],
                 choice.taken: values[present]}
        for name, column in columns.items():
            role = series_role(name)
            if role in ("compute", "tokens") and role not in piece:
                piece[role] = table[column].to_numpy(dtype=object)[present]
        pieces.append(pd.DataFrame(piece))
        piece_lines.append(lines[present])
    notes = ["read as a W&B wide export (Step plus '<run> - <metric>' columns)"]
    if without:
        notes.append(f"runs without {choice.taken!r} left out: " + ", ".join(without))
    return (pd.concat(pieces, ignore_index=True), np.concatenate(piece_lines), choice, notes)
