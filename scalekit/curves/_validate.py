"""Checks that turn raw columns into a valid tidy curve frame, or say exactly why not.

Every rejection is an :class:`~scalekit.errors.InputError` naming the source,
the line (the file line of the row; for frames without a file, the 1-based row),
the column and the reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scalekit.curves._schema import (FILE_ONLY_COLUMNS, INTEGER_RUN_COLUMNS, LOG_COLUMNS, RUN_ONLY_COLUMNS,
                                     is_log_metric)
from scalekit.errors import InputError

#: Cell texts read as "no value" in text formats.
EMPTY_TEXTS = frozenset({"", "nan", "NaN", "NAN", "null", "None", "NA", "N/A", "n/a", "<NA>"})
#: Largest whole number a float64 holds exactly (with every smaller one).
MAX_WHOLE = 2 ** 53
#: Why a whole number beyond :data:`MAX_WHOLE` is refused.
TOO_LARGE = "is too large to be held exactly; whole numbers up to 2**53 are supported"


class SourceLines:
    """The file line of each (run, step) of a tidy frame read from a text file.

    Readers keep it in :attr:`Curves.source_lines <scalekit.curves.Curves>` so that a
    check made later, on the frame as it is then (the store's test against the points
    it holds), can still name the line. It is looked up by (run, step), so reordering
    or filtering the frame does not misplace it.
    """

    def __init__(self, runs: np.ndarray, steps: np.ndarray, lines: np.ndarray) -> None:
        self.runs, self.steps, self.lines = np.asarray(runs), np.asarray(steps), np.asarray(lines)

    def line(self, run: str, step: int) -> int | None:
        """The file line of the point of ``run`` at ``step`` (None when there is none)."""
        hit = np.flatnonzero((self.steps == step) & (self.runs == run))
        return int(self.lines[hit[0]]) if hit.size else None


class Locator:
    """Turns a row position of a table into the place reported to the user.

    With ``lines`` (text files) a row is reported as its file line; without
    (Parquet, data frames) as its 1-based row number, written into the reason,
    unless ``source_lines`` knows the file line of the row's (run, step).
    """

    def __init__(self, source: str | None, lines: Sequence[int] | np.ndarray | None, *,
                 source_lines: SourceLines | None = None) -> None:
        self.source = source
        self.lines = None if lines is None else np.asarray(lines)
        self.rows: np.ndarray | None = None
        self.source_lines = source_lines

    def error_at_point(self, reason: str, row: int, run: str, step: int,
                       column: str | None = None) -> InputError:
        """:meth:`error` for the row at position ``row``, the point of ``run`` at ``step``:
        at its file line when ``source_lines`` knows it."""
        line = None if self.source_lines is None else self.source_lines.line(run, step)
        if line is None:
            return self.error(reason, row, column)
        return InputError(reason, source=self.source, line=line, column=column)

    def number(self, row: int) -> int:
        """The file line (text files) or 1-based row number of the row at position ``row``."""
        if self.lines is not None:
            return int(self.lines[row])
        return int(self.rows[row] if self.rows is not None else row) + 1

    def place(self, row: int) -> str:
        """``"line N"`` or ``"row N"`` for the row at position ``row``."""
        return f"{'line' if self.lines is not None else 'row'} {self.number(row)}"

    def error(self, reason: str, row: int | None = None, column: str | None = None) -> InputError:
        if row is None:
            return InputError(reason, source=self.source, column=column)
        if self.lines is not None:
            return InputError(reason, source=self.source, line=int(self.lines[row]),
                              column=column)
        return InputError(f"{reason} ({self.place(row)})", source=self.source, column=column)

    def subset(self, rows: np.ndarray) -> Locator:
        """The locator of the table restricted to positions ``rows``."""
        sub = Locator(self.source, None if self.lines is None else self.lines[rows])
        if self.lines is None:
            sub.rows = np.asarray(rows) if self.rows is None else self.rows[rows]
        return sub


def to_float(values: pd.Series | np.ndarray, column: str, where: Locator, *,
             missing: str = "error") -> np.ndarray:
    """Convert a column of numbers or number texts to float64.

    ``missing`` says what an empty cell is: ``"error"`` (rejected) or ``"nan"``
    (kept as NaN, meaning "not logged"). Texts that are not numbers, and
    explicit NaN or infinity, are always rejected.
    """
    raw = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if raw.dtype.kind in "fiu":
        out = raw.astype(np.float64, copy=False)  # the frame made of it copies it
        nan = np.isnan(out)
        if nan.any() and missing == "error":
            row = int(np.flatnonzero(nan)[0])
            raise where.error("the value is missing or NaN", row, column)
        _check_finite(out, column, where)
        return out
    try:
        fast = raw.astype(np.float64)
    except (TypeError, ValueError):
        fast = None
    if fast is not None and not np.isnan(fast).any() and not any(
            isinstance(cell, bool) for cell in raw):
        _check_finite(fast, column, where)
        return fast
    out = np.full(len(raw), np.nan)
    for row, cell in enumerate(raw):
        if cell is None or cell is pd.NA or (isinstance(cell, float) and np.isnan(cell)) or (
                isinstance(cell, str) and cell.strip() in EMPTY_TEXTS):
            if missing == "error" or (isinstance(cell, str) and cell.strip().lower() == "nan"):
                text = "NaN" if isinstance(cell, (str, float)) and str(cell).strip() else "missing"
                raise where.error(f"the value is {text}; a finite number is required", row, column)
            continue
        if isinstance(cell, bool):
            raise where.error(f"the value {cell!r} is not a number", row, column)
        try:
            out[row] = float(cell.strip() if isinstance(cell, str) else cell)
        except (TypeError, ValueError):
            raise where.error(f"the value {cell!r} is not a number", row, column) from None
    _check_finite(out, column, where)
    return out


def _check_finite(values: np.ndarray, column: str, where: Locator) -> None:
    bad = np.isinf(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise where.error(f"the value is {float(values[row])!r}; a finite number is required",
                          row, column)


def to_step(values: pd.Series | np.ndarray, column: str, where: Locator) -> np.ndarray:
    """Convert a step column to int64; steps are whole numbers >= 0."""
    raw = np.asarray(values)
    if raw.dtype.kind in "iu":
        out = raw.astype(np.int64)
    else:
        floats = to_float(raw, column, where)
        large = np.abs(floats) > MAX_WHOLE  # beyond 2**53 a float no longer holds every whole number
        if large.any():
            row = int(np.flatnonzero(large)[0])
            raise where.error(f"the step {float(floats[row])!r} {TOO_LARGE}", row, column)
        bad = floats != np.round(floats)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise where.error(f"the step {float(floats[row])!r} is not a whole number", row, column)
        out = floats.astype(np.int64)
    negative = out < 0
    if negative.any():
        row = int(np.flatnonzero(negative)[0])
        raise where.error(f"the step {out[row]} is negative", row, column)
    return out


def check_positive(values: np.ndarray, column: str, where: Locator) -> None:
    """Reject values <= 0 in a column whose logarithm is taken (NaN = not logged, allowed)."""
    bad = values <= 0
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise where.error(f"the value {float(values[row])!r} is not positive, but scaling laws "
                          "take its logarithm", row, column)


def run_order(runs: pd.Series | np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run codes (0, 1, … by first appearance) and the row order sorting by (run, step).

    When the rows already come run by run with increasing steps (the usual
    layout), the order is the identity and nothing is sorted.
    """
    codes = pd.factorize(runs, sort=False)[0].astype(np.int64)
    if len(codes) < 2:
        return codes, np.arange(len(codes))
    code_step, step_step = np.diff(codes), np.diff(steps)
    if np.all((code_step > 0) | ((code_step == 0) & (step_step > 0))):
        return codes, np.arange(len(codes))
    return codes, np.lexsort((steps, codes))


def check_frame(frame: pd.DataFrame, where: Locator, *, metrics: Sequence[str],
                config: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Check the cross-row rules of a tidy frame whose columns are already numeric.

    Rules: positive params/tokens/compute and loss-like metrics; no duplicate
    (run, step); compute non-decreasing with step within a run; run-level
    attributes (and ``config`` columns) constant within a run, and whole
    numbers where they count things. Returns ``run_order(frame.run, frame.step)``.
    """
    for column in (*LOG_COLUMNS, *FILE_ONLY_COLUMNS, *(m for m in metrics if is_log_metric(m))):
        if column in frame:
            check_positive(frame[column].to_numpy(dtype=np.float64), column, where)
    if {"params", "tokens"} <= set(frame.columns):   # 6·N·D must be a number
        params = frame["params"].to_numpy(dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            flops = 6.0 * params * frame["tokens"].to_numpy(dtype=np.float64)
        big = np.isinf(flops) & np.isfinite(params)
        if big.any():
            row = int(np.flatnonzero(big)[0])
            raise where.error(f"the value {float(params[row])!r} overflows 6·N·D (above "
                              "1.8e308 FLOPs); check the units of the column", row, "params")
    for column in INTEGER_RUN_COLUMNS:
        if column in frame:
            values = frame[column].to_numpy(dtype=np.float64)
            bad = ~np.isnan(values) & (values != np.round(values))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise where.error(f"the value {float(values[row])!r} is not a whole number",
                                  row, column)
            big = np.abs(values) > MAX_WHOLE
            if big.any():
                row = int(np.flatnonzero(big)[0])
                raise where.error(f"the value {float(values[row])!r} {TOO_LARGE}", row, column)
    steps = frame["step"].to_numpy()
    codes, order = run_order(frame["run"], steps)
    sorted_codes = codes[order]
    same_run = sorted_codes[1:] == sorted_codes[:-1]
    sorted_steps = steps[order]
    dup = same_run & (sorted_steps[1:] == sorted_steps[:-1])
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        first, second = sorted((int(order[i]), int(order[i + 1])))
        raise where.error(f"duplicate point: run {frame['run'].iloc[second]!r} has step "
                          f"{steps[second]} twice (first on {where.place(first)})",
                          second, "step")
    if "compute" in frame:
        compute = frame["compute"].to_numpy(dtype=np.float64)[order]
        falls = same_run & (compute[1:] < compute[:-1])
        if falls.any():
            i = int(np.flatnonzero(falls)[0])
            row = int(order[i + 1])
            raise where.error(f"compute decreases within run {frame['run'].iloc[row]!r}: "
                              f"{float(compute[i + 1])!r} at step {steps[row]} after "
                              f"{float(compute[i])!r} at step {steps[order[i]]}", row, "compute")
    starts = np.flatnonzero(np.r_[True, ~same_run])
    first_of = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    for column in (*RUN_ONLY_COLUMNS, *config):
        if column not in frame:
            continue
        values = frame[column].to_numpy()[order]
        first = values[first_of]
        if values.dtype.kind == "f":
            differ = ~((values == first) | (np.isnan(values) & np.isnan(first)))
        else:
            differ = ~pd.Series(values).eq(pd.Series(first)).to_numpy() & ~(
                pd.isna(values) & pd.isna(first))
        if differ.any():
            i = int(np.flatnonzero(differ)[0])
            now, before = (v.item() if isinstance(v, np.generic) else v
                           for v in (values[i], first[i]))
            raise where.error(f"the run-level value changes within run "
                              f"{frame['run'].iloc[order[i]]!r} ({now!r} after "
                              f"{before!r})", int(order[i]), column)
    return codes, order
