"""The one number formatter, intervals, collapsed notes and fixed-section text/HTML reports.

Every table cell, ``summary()`` and ``repr`` of a result writes numbers
through :func:`format_number`, so a value reads the same everywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

MISSING = "–"


def format_number(value: Any, digits: int = 4) -> str:
    """``value`` in ``digits`` significant digits.

    Integers keep all their digits, booleans read yes/no,
    ``None`` and NaN read "–", floats between 1e-3 and 1e5 (and 0) are written
    plainly, others in exponent form; anything else as ``str``.
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return MISSING
    if number == 0 or 1e-3 <= abs(number) < 1e5:
        return f"{number:.{digits}g}"
    return f"{number:.{max(digits - 1, 0)}e}"


def format_interval(pair: Sequence[Any] | None, digits: int = 4) -> str:
    """``[lo, hi]`` of a pair, "–" when there is none."""
    if pair is None:
        return MISSING
    return f"[{format_number(pair[0], digits)}, {format_number(pair[1], digits)}]"


def format_with_interval(value: Any, pair: Sequence[Any] | None, digits: int = 4) -> str:
    """``value [lo, hi]``; the value alone when an end of the interval is missing."""
    if pair is None or any(end is None or not math.isfinite(float(end)) for end in pair):
        return format_number(value, digits)
    return f"{format_number(value, digits)} {format_interval(pair, digits)}"


def collapse_notes(lines: Iterable[str]) -> list[str]:
    """Lines in first-seen order, each repeated one written once with its count: ``"… (×3)"``."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [line if n == 1 else f"{line} (×{n})" for line, n in counts.items()]


Section = tuple[str, Sequence[Any]]
"""A heading and its rows: ``(key, value)`` pairs or plain lines."""


def sections_text(title: str, sections: Iterable[Section]) -> str:
    """A fixed-section plain-text report (the shape of lmfit's ``fit_report``).

    ``[[heading]]`` lines open sections; pairs are aligned ``key = value``.
    Empty sections are left out.
    """
    out = [title]
    for heading, rows in sections:
        if not rows:
            continue
        out.append(f"[[{heading}]]")
        width = max((len(str(r[0])) for r in rows if isinstance(r, tuple)), default=0)
        for row in rows:
            if isinstance(row, tuple):
                out.append(f"    {str(row[0]):<{width}} = {_cell(row[1])}")
            else:
                out.append(f"    {row}")
    return "\n".join(out)


def sections_html(title: str, sections: Iterable[Section]) -> str:
    """The same report as a small HTML fragment (for notebooks' ``_repr_html_``)."""
    out = [f"<div><strong>{html.escape(title)}</strong>"]
    for heading, rows in sections:
        if not rows:
            continue
        out.append(f"<h4 style='margin:0.6em 0 0.2em'>{html.escape(heading)}</h4><table>")
        for row in rows:
            if isinstance(row, tuple):
                out.append(f"<tr><th style='text-align:left'>{html.escape(str(row[0]))}</th>"
                           f"<td style='text-align:right'>{html.escape(_cell(row[1]))}</td></tr>")
            else:
                out.append(f"<tr><td colspan='2'>{html.escape(str(row))}</td></tr>")
        out.append("</table>")
    out.append("</div>")
    return "".join(out)


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return format_interval(value)
    return format_number(value)
