"""Candidate runs: a pool of inputs with their costs (and, for a replay, their losses)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalekit.checks import fail
from scalekit.compute import FLOPS_PER_PARAM_TOKEN
from scalekit.errors import InputError

#: Column symbols a grid or a cost expression may use, as in law expressions.
SYMBOLS = {"N": "params", "D": "tokens", "C": "compute"}


@dataclass
class Pool:
    """Candidate experiments.

    Parameters
    ----------
    frame : DataFrame
        One row per candidate run; holds at least the law's inputs.
    cost : ndarray
        The cost of each row (FLOPs by default: 6·N·D).
    loss : ndarray, optional
        Known outcomes, revealed only when a row is chosen (:func:`~scalekit.design.replay`).
    """

    frame: pd.DataFrame
    cost: np.ndarray
    loss: np.ndarray | None = None

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, *, cost: str | None = None,
                   y: str | None = None) -> Pool:
        """A pool from a table; ``cost`` is a column or an expression of columns
        (default ``6*params*tokens``), ``y`` the column of known losses."""
        frame = frame.reset_index(drop=True)
        values = cost_values(frame, cost)
        loss = None
        if y is not None:
            if y not in frame:
                raise fail("y", y, f"a column of the pool ({', '.join(map(str, frame.columns))})")
            loss = numbers(frame, y, "pool", positive=True)
        return cls(frame=frame, cost=values, loss=loss)

    def __len__(self) -> int:
        return len(self.frame)

    def inputs(self, names, rows=None) -> dict[str, np.ndarray]:
        """The named columns (law inputs) at ``rows`` (all by default)."""
        part = self.frame if rows is None else self.frame.iloc[np.asarray(rows, dtype=int)]
        return {name: part[name].to_numpy(dtype=float) for name in names}


def numbers(frame: pd.DataFrame, column: str, what: str, *, positive: bool = False
            ) -> np.ndarray:
    """The ``column`` of ``frame`` (the table named by the parameter ``what``) as finite
    floats (positive ones with ``positive``, as losses are): a cell holding text, NaN, an
    infinity (or a number <= 0) is refused, naming its row; so is a table with no rows."""
    if len(frame) == 0:
        raise InputError(f"The value of `{what}` is a table with a header but no rows, but must "
                         "hold at least one run")
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | ((values <= 0) if positive else False)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        cell = frame[column].iloc[row]
        cell = repr(cell) if isinstance(cell, str) else str(cell)
        raise InputError(f"The value of `{what}` column {column!r} at row {row + 1} is "
                         f"{cell}, but must be a finite"
                         + (" positive" if positive else "") + " number")
    return values


def cost_values(frame: pd.DataFrame, cost: str | None) -> np.ndarray:
    """Each row's cost: a column, an expression of columns, or 6·N·D."""
    if cost is None:
        missing = [c for c in ("params", "tokens") if c not in frame]
        if missing:
            raise fail("cost", None, "a column or expression when the pool has no "
                       f"{' and no '.join(missing)} column (6·N·D is the default)")
        values = (FLOPS_PER_PARAM_TOKEN * numbers(frame, "params", "pool")
                  * numbers(frame, "tokens", "pool"))
    elif cost in frame:
        values = numbers(frame, cost, "cost")
    else:
        values = _evaluate(cost, frame)
    if not (np.isfinite(values).all() and (values > 0).all()):
        bad = int(np.flatnonzero(~(np.isfinite(values) & (values > 0)))[0])
        raise InputError(f"The value of `cost` at row {bad + 1} is {values[bad]!r}, but must be "
                         "a positive finite number")
    return values


def _evaluate(expression: str, frame: pd.DataFrame) -> np.ndarray:
    names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expression))
    env = {}
    for name in names:
        column = SYMBOLS.get(name, name)
        if column not in frame:
            raise fail("cost", expression, f"a column or an expression of the pool's columns "
                       f"({name!r} is neither)")
        env[name] = frame[column].to_numpy(dtype=float)
    if not re.fullmatch(r"[A-Za-z_0-9.eE+\-*/() ]+", expression):
        raise fail("cost", expression, "an expression of columns, numbers and + - * / ** ( )")
    try:
        return np.broadcast_to(np.asarray(eval(expression, {"__builtins__": {}}, env),
                                          dtype=float), (len(frame),)).copy()
    except (SyntaxError, ZeroDivisionError, TypeError) as error:
        raise fail("cost", expression, f"a valid expression ({error})") from None


#: The most candidate runs a grid may hold (the design scores every one at each pick).
MAX_GRID = 1_000_000


def grid_pool(spec: str) -> pd.DataFrame:
    """A log-spaced grid from ``"N=1e7:1e9:8,D=1e9:1e11:8"`` (symbol or column =
    low:high:count), every combination, columns named as law inputs; at most
    :data:`MAX_GRID` runs, each axis named once."""
    axes = {}
    parts = [p.strip() for p in str(spec).split(",")]
    if not any(parts) or not all(parts):
        raise fail("grid", spec, "NAME=LOW:HIGH:COUNT items separated by single commas, "
                   "e.g. N=1e7:1e9:8,D=1e9:1e11:8")
    for part in parts:
        match = re.fullmatch(r"([A-Za-z_][A-Za-z_0-9]*)=([^:]+):([^:]+):(\d+)", part)
        if match is None:
            raise fail("grid", spec, "NAME=LOW:HIGH:COUNT items separated by commas, "
                       "e.g. N=1e7:1e9:8,D=1e9:1e11:8")
        name, low, high, count = match.groups()
        try:
            low, high = float(low), float(high)
        except ValueError:
            raise fail("grid", spec, "numbers for LOW and HIGH") from None
        if not (0 < low <= high < np.inf and int(count) >= 1):
            raise fail("grid", part, "0 < LOW <= HIGH (finite) and COUNT >= 1")
        if low == high and int(count) > 1:
            raise fail("grid", part, "LOW < HIGH, or COUNT 1 where LOW = HIGH (the same run "
                       f"{count} times is one candidate)")
        column = SYMBOLS.get(name, name)
        if column in axes:
            raise fail("grid", spec, f"each input once ({name} names {column!r} twice)")
        axes[column] = (low, high, int(count))
    size = math.prod(count for *_, count in axes.values())
    if size > MAX_GRID:
        raise fail("grid", spec, f"at most {MAX_GRID:,} runs in all (it holds {size:.3g})")
    mesh = np.meshgrid(*(np.geomspace(*axis) for axis in axes.values()), indexing="ij")
    return pd.DataFrame({name: m.ravel() for name, m in zip(axes, mesh, strict=True)})


def target_on_compute(compute: float, *, points: int = 9, tokens_per_param: float = 20.0
                      ) -> pd.DataFrame:
    """Target runs on the IsoFLOP curve ``6·N·D = compute``: ``points`` model sizes
    log-spaced over a factor 10 either side of ``N = sqrt(compute / (6·tokens_per_param))``
    (the 20 tokens per parameter of Hoffmann et al. 2022)."""
    if not (np.isfinite(compute) and compute > 0):
        raise fail("target_compute", compute, "a positive number of FLOPs")
    center = np.sqrt(compute / (FLOPS_PER_PARAM_TOKEN * tokens_per_param))
    n = np.geomspace(center / 10, center * 10, points)
    return pd.DataFrame({"params": n, "tokens": compute / (FLOPS_PER_PARAM_TOKEN * n)})
