"""Tables as data — ``{"title", "columns", "rows"}`` — rendered as rich tables, TSV or JSON.

Commands build their tables once as data and print them in the format the
user asked for (``--format table|tsv|json``). The first column names things
(runs, approaches, budgets) and is never cut or wrapped; the others wrap so a
table stays readable at 80 columns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from scalekit.formatting import collapse_notes, format_number

FORMATS = ("table", "tsv", "json")


def table_data(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict:
    """A table as data; cells are kept as given (numbers are formatted when rendered)."""
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows]}


def rich_table(table: Mapping[str, Any]):
    """The table as a :class:`rich.table.Table` (cells as text, never read as markup)."""
    from rich.markup import escape
    from rich.table import Table

    grid = Table(title=escape(table["title"]) if table.get("title") else None,
                 title_justify="left")
    rows = [[_text(cell) for cell in row] for row in table["rows"]]
    for i, column in enumerate(table["columns"]):
        numeric = bool(rows) and all(_is_number(row[i]) for row in table["rows"])
        if i == 0:
            longest = max([len(column), *(len(row[0]) for row in rows)])
            grid.add_column(escape(column), no_wrap=True, min_width=longest)
        else:
            grid.add_column(escape(column), justify="right" if numeric else "left",
                            overflow="fold")
    for row in rows:
        grid.add_row(*(escape(cell) for cell in row))
    return grid


def tsv(table: Mapping[str, Any]) -> str:
    """The table as tab-separated text: a header line, then one line per row."""
    lines = ["\t".join(table["columns"])]
    lines += ["\t".join(_text(cell).replace("\t", " ") for cell in row) for row in table["rows"]]
    return "\n".join(lines)


def render_tables(tables: Sequence[Mapping[str, Any]], fmt: str, *, title: str | None = None,
                  header: Sequence[str] = (), lines: Sequence[str] = ()) -> Any:
    """``tables`` in format ``fmt``: a rich group (``table``) or a string (``tsv``, ``json``).

    In ``table`` format ``title`` and the ``header`` lines come first and ``lines``
    (notes, warnings) follow the tables, repeated ones collapsed into one line with
    a count; TSV and JSON carry the tables alone (TSV tables separated by a blank
    line, each preceded by ``# title``).
    """
    if fmt == "json":
        return json.dumps([{**t, "rows": [[_plain(c) for c in row] for row in t["rows"]]}
                           for t in tables], indent=2, allow_nan=False)
    if fmt == "tsv":
        return "\n\n".join((f"# {t['title']}\n" if t.get("title") else "") + tsv(t)
                           for t in tables)
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(title, style="bold")] if title else []
    parts += [Text(line) for line in header]
    parts += [rich_table(t) for t in tables]
    parts += [Text(line) for line in collapse_notes(lines)]
    return Group(*parts)


def _is_number(cell: Any) -> bool:
    return isinstance(cell, (int, float)) and not isinstance(cell, bool)


def _text(cell: Any) -> str:
    return cell if isinstance(cell, str) else format_number(cell)


def _plain(cell: Any) -> Any:
    if isinstance(cell, float) and not math.isfinite(cell):
        return None
    return cell if cell is None or isinstance(cell, (str, int, float, bool)) else str(cell)
