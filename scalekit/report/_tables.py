"""Tables as data — ``{"title", "columns", "rows"}`` — rendered as rich tables, TSV or JSON.

Commands build their tables once as data and print them in the format the
user asked for (``--format table|tsv|json``). Numbers are never
wrapped; text cells (run names) fold onto further lines rather than being cut
with an ellipsis, so a table stays readable at 80 columns and every name is
printed whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scalekit.formatting import collapse_notes, format_number, format_with_interval

FORMATS = ("table", "tsv", "json")


@dataclass(frozen=True)
class Estimate:
    """A table cell holding a value and its interval: ``value [low, high]`` in ``table``
    format; in TSV and JSON its column becomes three (``name``, ``name low``, ``name high``)
    of full numbers, so that another program reads numbers, not text."""

    value: Any
    low: Any = None
    high: Any = None
    digits: int = 3

    def text(self) -> str:
        return format_with_interval(self.value, (self.low, self.high), self.digits)


def table_data(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               digits: int = 4) -> dict:
    """A table as data; cells are kept as given and numbers formatted when rendered
    (``digits`` significant digits in ``table`` format, in full in TSV and JSON)."""
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows],
            "digits": digits}


def rich_table(table: Mapping[str, Any], *, width: int | None = None) -> list:
    """The table as :class:`rich.table.Table` s (cells as text, never read as markup).

    When its columns do not fit in ``width`` (default: the terminal's, 80 when
    there is none), the columns are split over several tables, each repeating
    the first column, as a wide frame is printed in parts.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    width = width or Console().width
    digits = table.get("digits", 4)
    rows = [[_text(cell, digits) for cell in row] for row in table["rows"]]
    columns = list(table["columns"])
    need = [max([len(c), *(len(row[i]) for row in rows)]) + 3 for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(_is_number(row[i]) for row in table["rows"])
               for i in range(len(columns))]
    # long text (run names, paths) folds when it must: within a third of the width for
    # the first column, a quarter for the others
    plan = [n if numeric[i] else min(n, max(15, width // (3 if i == 0 else 4)))
            for i, n in enumerate(need)]
    parts, current = [], [0]
    for i in range(1, len(columns)):
        if current != [0] and 1 + sum(plan[j] for j in current) + plan[i] > width:
            parts.append(current)
            current = [0]
        current.append(i)
    parts.append(current)
    grids = []
    for k, part in enumerate(parts):
        title = table.get("title") if k == 0 else None
        grid = Table(title=escape(title) if title else None, title_justify="left")
        for i in part:
            # numbers are never wrapped; text (run names first) folds onto more lines
            # instead of being cut with an ellipsis when it is wider than the terminal
            grid.add_column(escape(columns[i]), justify="right" if numeric[i] else "left",
                            no_wrap=numeric[i], overflow="fold",
                            min_width=need[i] - 3 if numeric[i] else min(need[i] - 3, 12))
        for row in rows:
            grid.add_row(*(escape(row[i]) for i in part))
        grids.append(grid)
    return grids


def tsv(table: Mapping[str, Any]) -> str:
    """The table as tab-separated text: a header line, then one line per row.

    Numbers are written in full (``repr``), missing ones as empty cells, so
    that another program reads back what the table holds.
    """
    lines = ["\t".join(_cell(str(c)) for c in table["columns"])]
    lines += ["\t".join(_cell(_raw(cell)) for cell in row) for row in table["rows"]]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """A TSV cell: a tab or line break in text becomes a space, and text a spreadsheet would
    run as a formula (``=``, ``+``, ``-``, ``@`` first) gets a ``'`` in front
    (:func:`scalekit.curves.escape_cell`, as the store's CSV export does); numbers are
    written as they are (``-0.5`` stays a number)."""
    from scalekit.curves import escape_cell

    flat = " ".join(text.replace("\t", " ").splitlines()) if text else text
    if flat in ("-", "–"):                 # a placeholder, not a formula
        return flat
    try:
        float(flat)
        return flat
    except ValueError:
        return escape_cell(flat)


def render_tables(tables: Sequence[Mapping[str, Any]], fmt: str, *, title: str | None = None,
                  header: Sequence[str] = (), lines: Sequence[str] = ()) -> Any:
    """``tables`` in format ``fmt``: a rich group (``table``) or a string (``tsv``, ``json``).

    In ``table`` format ``title`` and the ``header`` lines come first and ``lines``
    (notes, warnings) follow the tables, repeated ones collapsed into one line with
    a count; TSV and JSON carry the tables alone (TSV tables separated by a blank
    line, each preceded by ``# title``, when there are several).
    """
    if fmt != "table":
        tables = [_split_estimates(t) for t in tables]
    if fmt == "json":
        return json.dumps([{"title": t.get("title", ""), "columns": list(t["columns"]),
                            "rows": [[_plain(c) for c in row] for row in t["rows"]]}
                           for t in tables], indent=2, allow_nan=False)
    if fmt == "tsv":
        if len(tables) == 1:
            return tsv(tables[0])
        return "\n\n".join((f"# {t['title']}\n" if t.get("title") else "") + tsv(t)
                           for t in tables)
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(title, style="bold")] if title else []
    parts += [Text(line) for line in header]
    parts += [grid for t in tables for grid in rich_table(t)]
    parts += [Text(line) for line in collapse_notes(lines)]
    return Group(*parts)


def _split_estimates(table: Mapping[str, Any]) -> dict:
    """``table`` with each column holding an :class:`Estimate` split into the value, its low
    and its high end (named ``name``, ``name low``, ``name high``; a ``[95%]`` in the name
    moves to the ends)."""
    rows = table["rows"]
    split = [any(isinstance(row[i], Estimate) for row in rows)
             for i in range(len(table["columns"]))]
    if not any(split):
        return dict(table)
    columns = []
    for name, wide in zip(table["columns"], split, strict=True):
        base, _, level = str(name).partition(" [")
        level = f" [{level}" if level else ""
        columns += [base, f"{base} low{level}", f"{base} high{level}"] if wide else [name]
    out = []
    for row in rows:
        cells = []
        for cell, wide in zip(row, split, strict=True):
            if not wide:
                cells.append(cell)
            elif isinstance(cell, Estimate):
                cells += [cell.value, cell.low, cell.high]
            else:
                cells += [cell, None, None]
        out.append(cells)
    return {**table, "columns": columns, "rows": out}


def _is_number(cell: Any) -> bool:
    return isinstance(cell, (int, float, np.number)) and not isinstance(cell, bool)


def _text(cell: Any, digits: int = 4) -> str:
    if isinstance(cell, Estimate):
        return cell.text()
    return cell if isinstance(cell, str) else format_number(cell, digits)


def _raw(cell: Any) -> str:
    plain = _plain(cell)
    return "" if plain is None else plain if isinstance(plain, str) else repr(plain)


def _plain(cell: Any) -> Any:
    if isinstance(cell, (float, np.floating)):
        return float(cell) if math.isfinite(cell) else None
    if isinstance(cell, np.integer):
        return int(cell)
    return cell if cell is None or isinstance(cell, (str, int, bool)) else str(cell)
