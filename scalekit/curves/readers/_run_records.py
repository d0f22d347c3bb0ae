"""Runs as tracking tools keep them (named series and logged parameters) into a curve frame.

The TensorBoard, W&B, MLflow and Optuna readers each turn their source into
:class:`RunRecord` objects; :func:`frame_from_records` turns those into a
tidy curve frame with one rule for all of them: the metric is chosen once for
every run (:mod:`~scalekit.curves.readers._metric_choice`); series named like
compute, tokens or wall time become those columns; the other series stay as
further metrics, at the steps of the chosen one; parameters that name a size,
token count, depth, width, class count, k or seed become run attributes by the
alias table of :mod:`scalekit.curves._schema`, the rest run configuration.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.curves._curve_set import Curves
from scalekit.curves.readers._metric_choice import MetricChoice, choose_metric
from scalekit.curves.readers._table import tidy_from_table
from scalekit.curves._schema import CONFIG_PREFIX, KEY_COLUMNS, METRIC_PREFIX, attribute_role, series_role
from scalekit.curves._validate import Locator
from scalekit.errors import InputError


_COUNT = re.compile(r"^\s*(?P<number>\d+(?:\.\d*)?)\s*(?P<unit>[kKmMbBgGtT])\s*$")
_MULTIPLIERS = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


@dataclass
class RunRecord:
    """One run of a tracking tool.

    Attributes
    ----------
    name : str
        The run's name.
    series : dict
        Logged series by name: ``(steps, values, wall_times or None)``, in logging order.
    attributes : dict
        Logged parameters (hyper-parameters, configuration) by name.
    axes : dict
        Series whose steps count on another axis than the run's step, with that axis's name;
        only series on the same axis as the metric join its rows.
    """

    name: str
    series: dict[str, tuple[Sequence[int], Sequence[float], Sequence[float] | None]] = \
        field(default_factory=dict)
    attributes: dict[str, object] = field(default_factory=dict)
    axes: dict[str, str] = field(default_factory=dict)


def frame_from_records(records: Sequence[RunRecord], *, source: str, metric: str = "loss",
                       mapped: str | None = None, duplicates: str = "error",
                       keep: Sequence[str] = (), what: str = "series",
                       choice: MetricChoice | None = None) -> Curves:
    """The :class:`~scalekit.curves.Curves` of ``records`` (see the module's rules).

    Parameters
    ----------
    records : sequence of RunRecord
    source : str
        The file, folder or URI read, for messages.
    metric : str
        The metric asked for (``loss``).
    mapped : str, optional
        The series to take as the metric, given explicitly.
    duplicates, keep
        As for :func:`scalekit.curves.read_curves`.
    what : str
        What the source calls a series (``scalar tag``, ``metric``), for messages.
    choice : MetricChoice, optional
        The metric choice, when the source settles it (one series per run).
    """
    names = list(dict.fromkeys(n for r in records for n in r.series
                               if series_role(n) is None and n not in KEY_COLUMNS))
    if choice is None:
        choice = choose_metric(names, metric, mapped=mapped, source=source)
    if choice is None:
        raise InputError(f"no {what} named {metric!r} (or train/{metric}, val/{metric}, …); "
                         + (f"found: {', '.join(names)}; " if names else "")
                         + "ask for one by its name as `metric`", source=source)
    pieces, notes, without, dropped = [], [], [], 0
    for record in records:
        if choice.taken not in record.series:
            without.append(record.name)
            continue
        piece, left = _points(record, choice.taken)
        dropped += left
        piece.update(_attributes(record.attributes, len(piece["step"]), "tokens" in piece))
        pieces.append(pd.DataFrame(piece))
    if not pieces:
        raise InputError(f"no run logs {choice.taken!r}", source=source)
    if without:
        notes.append(f"runs without {choice.taken!r} left out: " + ", ".join(without))
    if dropped:
        notes.append(f"{dropped} points of other {what}s at steps where {choice.taken!r} was "
                     "not logged were left out")
    table = pd.concat(pieces, ignore_index=True)
    curves = tidy_from_table(table, Locator(source, None), mapping={"run": "run", "step": "step"},
                             metric=metric, duplicates=duplicates, keep=keep, choice=choice)
    return curves.noted(notes)


def _points(record: RunRecord, taken: str) -> tuple[dict[str, object], int]:
    """The run's rows at the steps of ``taken``, and how many other points had no such step."""
    steps, values, walls = record.series[taken]
    steps = np.asarray(steps, dtype=np.int64)
    piece: dict[str, object] = {"run": np.full(len(steps), record.name, dtype=object),
                                "step": steps, taken: np.asarray(values, dtype=np.float64)}
    if walls is not None:
        piece["wall_time"] = np.asarray(walls, dtype=np.float64)
    left = 0
    for name, (other_steps, other_values, _) in record.series.items():
        role = series_role(name)
        if name == taken or role == "step" or name in KEY_COLUMNS:
            continue
        if record.axes.get(name) != record.axes.get(taken):
            left += len(other_steps)
            continue
        column = role or METRIC_PREFIX + name
        if column in piece:
            continue
        at = dict(zip((int(s) for s in other_steps), other_values, strict=True))
        piece[column] = np.array([at.get(int(s), np.nan) for s in steps], dtype=np.float64)
        left += len(at.keys() - set(steps.tolist()))
    return piece, left


def _attributes(attrs: Mapping[str, object], rows: int, has_tokens: bool) -> dict[str, list]:
    """Run-level columns of one run: attributes by role, the rest as configuration."""
    out: dict[str, list] = {}
    for key, value in _flat(attrs).items():
        role = attribute_role(key)
        number = _number(value, counts=role in ("params", "tokens"))
        if role == "tokens" and (has_tokens or rows > 1):
            role = None  # a run's token budget is not the tokens seen at each point
        if role is not None and number is not None and role not in out:
            out[role] = [number] * rows
        else:
            out[CONFIG_PREFIX + key] = [value] * rows
    return out


def _flat(attrs: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Nested configuration as ``a.b`` keys; values JSON can hold (others as text)."""
    out: dict[str, object] = {}
    for key, value in attrs.items():
        name = prefix + str(key)
        if isinstance(value, Mapping):
            out.update(_flat(value, name + "."))
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            value = str(value)
        out[name] = value
    return out


def _number(value: object, *, counts: bool = False) -> float | None:
    """A finite number from a number or a number's text; None otherwise.

    With ``counts``, texts such as ``125M``, ``1.3B`` or ``300k`` (sizes and token
    counts as they are often logged) are read with their multiplier.
    """
    if isinstance(value, bool):
        return None
    if counts and isinstance(value, str):
        match = _COUNT.match(value)
        if match:
            return float(match["number"]) * _MULTIPLIERS[match["unit"].upper()]
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
