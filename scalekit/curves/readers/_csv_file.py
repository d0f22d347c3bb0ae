"""CSV and TSV files: every cell read as text, with the file line of every row.

Text that a spreadsheet would run as a formula (a cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) is written by scalekit with a ``'`` in front
(OWASP's advice against CSV injection; a cell starting with ``'`` gets one more), and
that ``'`` is taken off again when a cell is read (:func:`escape_cell`,
:func:`unescape_cell`), so an export read back is the same, byte for byte.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.errors import InputError

#: First characters of a cell that a spreadsheet runs as a formula, and the escape itself.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def escape_cell(text: str) -> str:
    """``text`` with a ``'`` in front when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def unescape_cell(text: str) -> str:
    """The inverse of :func:`escape_cell`."""
    return text[1:] if text[:1] == "'" and text[1:].startswith(FORMULA_STARTS) else text


def read_csv_table(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Read every cell as text; return the table and the file line where each row starts."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    source = str(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, delimiter=delimiter, strict=True)
            header, rows, lines = None, [], []
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                if not row or all(not cell.strip() for cell in row):
                    continue
                if header is None and row[0].lstrip().startswith("#"):
                    continue                    # a comment line above the header
                row = [unescape_cell(cell) for cell in row]
                if header is None:
                    header = [cell.strip() for cell in row]
                    _check_header(header, source)
                    continue
                if len(row) != len(header):
                    raise InputError(f"the row has {len(row)} cells but the header has "
                                     f"{len(header)}; the file is not valid CSV",
                                     source=source, line=start)
                rows.append(row)
                lines.append(start)
    except csv.Error as exc:
        raise InputError(f"the file is not valid CSV ({exc})", source=source,
                         line=reader.line_num) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"the file is not UTF-8 text ({exc.reason})", source=source) from None
    if header is None:
        raise InputError("the file is empty", source=source)
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    table = pd.DataFrame({name: np.array(cells, dtype=object)
                          for name, cells in zip(header, columns, strict=True)}, columns=header)
    return table, np.asarray(lines, dtype=np.int64)


def _check_header(header: list[str], source: str) -> None:
    seen = set()
    for name in header:
        if not name:
            raise InputError("the header has an empty column name", source=source, line=1)
        if name in seen:
            raise InputError("the column name appears twice in the header", source=source,
                             line=1, column=name)
        seen.add(name)
