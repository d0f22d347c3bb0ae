"""Fit a law to a tidy curve frame: pick the law, the points and the inputs.

This is what ``scalekit fit`` does between reading a file and printing a report,
kept here so that a notebook gets the same result in one call::

    curves = read_curves("curves.csv")
    result = fit_frame(curves, drop_top=5)   # result.points: what it fitted
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit._constrain import constrained_law
from scalekit.laws import Law, get_law

if TYPE_CHECKING:
    import pandas as pd

    from scalekit.curves import Curves

#: Words that name a registered law rather than an expression.
_LAW_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class FitInput:
    """The points a law is fitted to, and how they were chosen.

    Attributes
    ----------
    law : Law
        The law to fit.
    X : dict of str to ndarray
        Inputs of the law, by input name.
    y : ndarray
        The metric.
    frame : DataFrame
        The rows used, in the order of ``y``.
    notes : list of str
        How the points were chosen (law picked, last point per run).
    diagnostics : list of Diagnostic
        ``outliers_dropped`` when points were dropped.
    runs : ndarray or None
        The run of each point (for the bootstrap over runs), when the data name runs.
    """

    law: Law
    X: dict[str, np.ndarray]
    y: np.ndarray
    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    runs: np.ndarray | None = None


def resolve_law(spec: str, *, columns=(), bounds=None) -> Law:
    """A registered law by name, or a custom law from an expression string.

    In an expression, a name that is one of the data's ``columns`` is an input read from
    that column (``L + B*dense_parameter_count**-alpha``), besides ``N``, ``D``, ``C`` and
    ``x``; every other name is a parameter. ``bounds`` (parameter name to (lower, upper),
    natural units, None for an open end) set search ranges: an expression's parameter
    takes the range as it is (a negative lower end makes it a parameter of either sign,
    fitted as it is; two finite ends put its starts at the quartiles of the range, in
    log for a positive one), a registered law's range is narrowed to it
    (:func:`~scalekit.fit._constrain.constrained_law`).
    """
    if _LAW_NAME.match(spec):
        law = get_law(spec)
        return constrained_law(law, bounds=bounds) if bounds else law
    from scalekit.laws import EXPRESSION_SYMBOLS, law_from_expression

    names = [str(c) for c in columns
             if _LAW_NAME.match(str(c)) and str(c) not in EXPRESSION_SYMBOLS]
    if not bounds:
        return law_from_expression(spec, inputs=names)
    params = [n for n in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", spec))
              if n not in names and n not in EXPRESSION_SYMBOLS and not re.search(
                  rf"\b{n}\s*\(", spec)]
    unknown = sorted(set(bounds) - set(params))
    if unknown:
        raise fail("bounds", unknown[0], f"a parameter of law {spec!r} ({', '.join(params)})")
    return law_from_expression(spec, inputs=names,
                               params={k: _range(k, v) for k, v in bounds.items()})


def _range(name: str, pair) -> dict:
    """An expression parameter's ``params`` entry for the range ``pair``."""
    lower, upper = (None if v is None else float(v) for v in pair)
    out = {k: v for k, v in (("lower", lower), ("upper", upper)) if v is not None}
    if lower is not None and upper is not None and not lower < upper:
        raise fail(f"bounds[{name!r}]", pair, "a range (lower < upper)")
    if lower is not None and upper is not None and np.isfinite([lower, upper]).all():
        log = lower > 0
        a, b = (np.log(lower), np.log(upper)) if log else (lower, upper)
        out.update(log=log, grid=(a + (b - a) / 4, a + 3 * (b - a) / 4))
    elif lower is not None and lower < 0:
        out["log"] = False
    return out


def choose_law(frame: pd.DataFrame, *, x: str | None = None) -> Law:
    """Pick a law from the columns of ``frame``.

    N and D that both vary give Chinchilla; compute gives the compute frontier;
    an explicit ``x`` column gives the saturating power law.
    """
    def varies(column: str) -> bool:
        return column in frame and frame[column].nunique() > 1

    if x is None and varies("params") and varies("tokens"):
        return get_law("chinchilla")
    if x is None and varies("compute"):
        return get_law("frontier")
    if x is not None:
        return get_law("saturating_power")
    raise InputError("cannot choose a law: the data have neither varying params and tokens "
                     "nor compute; name the x column as `x` or the law as `law`")


def last_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's last logged point (``frame`` itself where no run has several steps)."""
    if "run" in frame and "step" in frame and frame["run"].duplicated().any():
        return frame.sort_values(["run", "step"]).groupby("run", sort=False).tail(1)
    return frame


def prepare_fit(frame: Curves | pd.DataFrame, *, law: Law | str | None = None,
                x: str | None = None, y: str = "loss", all_points: bool = False,
                drop_top: int = 0) -> FitInput:
    """Choose the law and the points of ``frame`` to fit.

    Parameters
    ----------
    frame : Curves or DataFrame
        The curves (see :mod:`scalekit.curves`): their reader's notes (less the metric
        choice its diagnostic says) end the notes, its diagnostics start the diagnostics.
    law : Law or str, optional
        A law, a registered name or an expression; chosen from the columns if omitted.
    x : str, optional
        Column that feeds the law's ``x`` input (or the only input of a one-input law).
    y : str
        Metric column to fit.
    all_points : bool
        Fit every logged point; by default only the last point of each run is used,
        since the laws describe final losses of runs trained to their length.
    drop_top : int
        Drop the ``drop_top`` highest values of ``y`` first (Besiroglu et al. 2024
        drop the five highest Chinchilla losses).
    """
    from scalekit.curves import Curves  # pandas: imported when used

    drop_top = check_number("drop_top", drop_top, low=0, integer=True)
    curves = Curves.of(frame)
    frame = curves.frame
    if y not in frame:
        raise fail("y", y, "a column of the data (" + ", ".join(map(str, frame.columns)) + ")")
    if x is not None and x not in frame:
        raise fail("x", x, "a column of the data (" + ", ".join(map(str, frame.columns)) + ")")
    law = (resolve_law(law, columns=[c for c in frame.columns if c != y])
           if isinstance(law, str) else law or choose_law(frame, x=x))
    notes = [f"law: {law.name}"]
    diagnostics = list(curves.diagnostics)
    rows = frame if all_points else last_points(frame)
    if rows is not frame:
        notes.append(f"last point of each of {len(rows)} runs (`all_points` uses all points)")
        diagnostics += _last_points_too_narrow(law, frame, rows)
    if drop_top:
        if drop_top >= len(rows):
            raise fail("drop_top", drop_top, f"< the number of points ({len(rows)})")
        dropped = rows[y].nlargest(drop_top)
        rows = rows.drop(dropped.index)
        diagnostics.append(Diagnostic(
            "outliers_dropped", "info",
            f"the {drop_top} highest values of {y} (from {dropped.min():.4g}) were left out "
            "of the fit; the result holds for the remaining points only", value=drop_top))
    rows = rows.reset_index(drop=True)
    X = {}
    for name in law.inputs:
        column = x if (name == "x" or len(law.inputs) == 1) and x is not None else name
        if column not in rows:
            raise InputError(f"law {law.name!r} needs input {name!r}, but the data have no "
                             f"column {column!r}" + ("; name it as `x`" if name == "x" else ""))
        X[name] = rows[column].to_numpy(dtype=float)
    runs = rows["run"].to_numpy() if "run" in rows else None
    return FitInput(law=law, X=X, y=rows[y].to_numpy(dtype=float), frame=rows,
                    notes=notes + curves.unsaid_notes(), diagnostics=diagnostics, runs=runs)


#: Least span (max/min) of an input for the last points to pin the law along it (a decade);
#: below LAST_POINTS_PINNED (the span ``not_identified`` asks for) it is not pinned at all.
LAST_POINTS_SPAN, LAST_POINTS_PINNED = 10.0, 2.0


def _last_points_too_narrow(law: Law, frame: pd.DataFrame, rows: pd.DataFrame) -> list:
    """A warning for each input of ``law`` that the runs' last points span less than a
    decade of while all their checkpoints span more (a sweep of sizes at one token count
    cannot pin the exponent, scale and floor of the tokens term)."""
    found = []
    for name in law.inputs:
        if name not in rows or rows[name].dtype.kind not in "fiu":
            continue
        last = rows[name].to_numpy(dtype=float)
        every = frame[name].to_numpy(dtype=float)
        last, every = last[last > 0], every[every > 0]
        if not last.size or not every.size:
            continue
        span, full = last.max() / last.min(), every.max() / every.min()
        if span < LAST_POINTS_SPAN <= full:
            pinned = span >= LAST_POINTS_PINNED   # below 2x: cannot be pinned at all
            found.append(Diagnostic(
                "last_points_narrow", "warning",
                f"the last point of each run spans {span:.3g}x in {name} but all checkpoints "
                f"span {full:.3g}x, so the law's terms in {name} are "
                + ("loosely pinned" if pinned else "not pinned")
                + ": fit every checkpoint with `all_points`", param=name, value=float(span)))
    return found


def fit_frame(frame: Curves | pd.DataFrame, *, law: Law | str | None = None, x: str | None = None,
              y: str = "loss", all_points: bool = False, drop_top: int = 0, **fit_options):
    """Choose law and points with :func:`prepare_fit`, then :func:`~scalekit.fit.fit_law`.

    ``fit_options`` go to :func:`~scalekit.fit.fit_law` (``loss``, ``delta``,
    ``bootstrap``, ``ci_level``, ``seed``, ``n_jobs``, ``fixed``, ``bounds``,
    ``resample``); the runs of the points go with them, so the bootstrap resamples
    whole runs when runs have several points. The result's diagnostics start with
    the reader's (``metric_choice``) and the choice of points (``outliers_dropped``).

    Returns
    -------
    FitResult
        With ``points``: the law, points and notes the fit used (a :class:`FitInput`).
    """
    from scalekit.curves import Curves
    from scalekit.fit import fit_law

    if isinstance(law, str) and not _LAW_NAME.match(law) and fit_options.get("bounds"):
        # an expression's bounds set its parameters' ranges (resolve_law), signs included
        columns = [c for c in Curves.of(frame).frame.columns if c != y]
        law = resolve_law(law, columns=columns, bounds=fit_options.pop("bounds"))
    try:
        prepared = prepare_fit(frame, law=law, x=x, y=y, all_points=all_points,
                               drop_top=drop_top)
        result = fit_law(prepared.law, prepared.X, prepared.y, runs=prepared.runs,
                         **fit_options)
    except InputError as exc:  # name the file the curves were read from
        source = Curves.of(frame).source
        if exc.source is not None or source is None:
            raise
        raise InputError(exc.reason, source=source, line=exc.line,
                         column=exc.column) from None
    result.diagnostics[:0] = prepared.diagnostics
    result.points = prepared
    return result
