"""The planners' laws fitted to measurements, after the checks of their domains.

Each function takes a tidy curve frame (one row per logged point; of a run logged at
several steps only its last point counts, as the laws describe finished runs),
refuses the first value outside the law's domain by its run, file line and column,
and fits the law by :func:`scalekit.fit.frame.fit_frame`:

- :func:`fit_depth_law`: the depth law of Liu, Kangaslahti, Liu & Gore (2026),
  ``L(m, l, D)``, from columns ``width``, ``depth``, ``tokens``;
- :func:`fit_class_count_law`: ``eps(K) = min(c K^gamma, 1 - 1/K)`` of Nadgir,
  Balasubramanian & Chaudhari, from ``classes`` and an error in (0, 1);
- :func:`fit_inference_k_law`: error against the number of samples ``k`` (Halder &
  Pehlevan), from ``k`` >= 1 and a positive error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.checks import check_number
from scalekit.errors import InputError
from scalekit.fit.frame import fit_frame, last_points
from scalekit.laws import get_law
from scalekit.laws.depth import count_depth


def fit_depth_law(frame: pd.DataFrame, *, y: str = "loss", keep_lowest: int | None = None,
                  exclude_end_layers: bool = False, source: str | None = None, **fit_options):
    """Fit the depth law ``depth_width_data`` to each run's last point.

    Parameters
    ----------
    keep_lowest : int, optional
        Fit only the ``keep_lowest`` lowest values of ``y`` (Liu et al. keep 203).
    exclude_end_layers : bool
        Count depth without the first and last layers (every run needs 3 or more).
    source : str, optional
        The file the frame was read from, for error messages.
    fit_options
        For :func:`~scalekit.fit.fit_law` (``loss``, ``bootstrap``, ``seed``, ...).

    Returns
    -------
    result : FitResult
    prepared : FitInput
    """
    rows = last_points(frame)
    if exclude_end_layers:
        _require_columns(rows, ["depth"], source)
        _check_range(rows, "depth", rows["depth"] < 3, "at least 3 with `exclude_end_layers`",
                     source)
        rows = rows.assign(depth=count_depth(rows["depth"], exclude_end_layers=True))
    drop_top = 0
    if keep_lowest is not None:
        check_number("keep_lowest", keep_lowest, low=1, high=len(rows), integer=True)
        drop_top = len(rows) - keep_lowest
    return _fit(rows, "depth_width_data", y, source, drop_top=drop_top, **fit_options)


def fit_class_count_law(frame: pd.DataFrame, *, y: str = "error", source: str | None = None,
                        **fit_options):
    """Fit the class-count law ``class_count`` to each run's last point (classes >= 2,
    error strictly between 0 and 1); returns ``(result, prepared)`` as
    :func:`fit_depth_law`."""
    rows = last_points(frame)
    _require_columns(rows, ["classes", y], source)
    _check_range(rows, "classes", rows["classes"] < 2, "at least 2", source)
    _check_range(rows, y, (rows[y] <= 0) | (rows[y] >= 1), "strictly between 0 and 1", source)
    return _fit(rows, "class_count", y, source, **fit_options)


def fit_inference_k_law(frame: pd.DataFrame, *, y: str = "error", source: str | None = None,
                        **fit_options):
    """Fit the law ``inference_k`` to each run's last point (k >= 1, error > 0); returns
    ``(result, prepared)`` as :func:`fit_depth_law`."""
    rows = last_points(frame)
    _require_columns(rows, ["k", y], source)
    _check_range(rows, "k", rows["k"] < 1, "at least 1", source)
    _check_range(rows, y, rows[y] <= 0, "positive", source)
    return _fit(rows, "inference_k", y, source, **fit_options)


def _fit(rows, law, y, source, *, drop_top=0, **fit_options):
    check_number("bootstrap", fit_options.get("bootstrap", 0), low=0, integer=True)
    _require_columns(rows, list(get_law(law).inputs) + [y], source)
    return fit_frame(rows, law=law, y=y, drop_top=drop_top, **fit_options)


def _require_columns(rows, columns, source) -> None:
    missing = [column for column in columns if column not in rows]
    if missing:
        raise InputError(f"needs the column(s) {', '.join(missing)} (found: "
                         f"{', '.join(map(str, rows.columns))}); map them with `mapping` "
                         "role=column", source=source)


def _check_range(rows, column, bad, rule, source) -> None:
    """Refuse the first row where ``bad`` holds, naming its run (or row) and value."""
    if not bad.any():
        return
    where = int(np.flatnonzero(np.asarray(bad))[0])
    row = rows.iloc[where]
    which = f"run {row['run']!r}" if "run" in rows else f"row {where + 1}"
    lines = rows.attrs.get("source_lines")  # the reader's file line of each (run, step)
    line = (lines.line(row["run"], row["step"])
            if lines is not None and {"run", "step"} <= set(rows.columns) else None)
    raise InputError(f"{which} has {column} = {row[column]:g}, but every value must be {rule}",
                     source=source, column=column, line=line)
