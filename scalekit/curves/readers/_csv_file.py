"""CSV and TSV files: the table and the file line of every row.

A plain file (no quotes, no ``'`` escapes, no carriage returns, one row per line, no
blank line) is parsed by pandas' C reader: numbers arrive as arrays, and the row on line
``k`` is row ``k - 2``. Any other file, and any file that reader refuses, is read row by
row with :mod:`csv` (every cell as text), which names the line of what is wrong.

Text that a spreadsheet would run as a formula (a cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) is written by scalekit with a ``'`` in front
(OWASP's advice against CSV injection; a cell starting with ``'`` gets one more), and
that ``'`` is taken off again when a cell is read (:func:`escape_cell`,
:func:`unescape_cell`), so an export read back is the same, byte for byte.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable, Collection
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


def read_csv_table(path: Path, *, text: Callable[[list[str]], Collection[str]] = lambda _: (),
                   ) -> tuple[pd.DataFrame, np.ndarray]:
    """Read the file; return the table (numbers as numbers where a whole column is plain
    numbers, else text) and the file line where each row starts. ``text(header)`` names the
    columns kept as text whatever they hold (run names: ``001`` is not ``1``)."""
    fast = _read_plain(path, text)
    return _read_rows(path) if fast is None else fast


#: Bytes that send a file to the row-by-row reader (quotes, escapes, old Mac line ends).
_NOT_PLAIN = (b'"', b"'", b"\r")
#: Bytes scanned at a time for them.
_CHUNK = 1 << 24
#: Rows parsed at a time: the columns are then joined one by one, so the peak memory is the
#: table and one column, not the table and the reader's buffers of the whole file.
_ROWS = 1 << 20


def _read_plain(path: Path, text: Callable[[list[str]], Collection[str]],
                ) -> tuple[pd.DataFrame, np.ndarray] | None:
    """The table of a plain file through pandas' C reader, or None where the file is not
    plain (see the module) or that reader refuses it; cells are kept as written (no
    ``NA`` texts), numbers parsed as :func:`float` parses them."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    newlines = delimiters = 0
    last = b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            if any(byte in chunk for byte in _NOT_PLAIN):
                return None
            newlines += chunk.count(b"\n")
            delimiters += chunk.count(delimiter.encode())
            last = chunk[-1:]
    lines = newlines + (last != b"\n")
    try:
        with path.open(encoding="utf-8-sig") as handle:
            header = [cell.strip() for cell in handle.readline().rstrip("\n").split(delimiter)]
        as_text = {name: str for name in text(header) if name in header}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = list(pd.read_csv(path, sep=delimiter, names=header, skiprows=1,
                                      na_filter=False, encoding="utf-8-sig",
                                      skip_blank_lines=False, engine="c", dtype=as_text,
                                      chunksize=_ROWS))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        return None
    if not chunks or any((c.dtypes.map(lambda d: d.kind) == "b").any() for c in chunks):
        return None  # True/False: text, as the row reader keeps it
    table = _joined(chunks, header)
    rows = len(table)
    if not any(header) or lines != rows + 1 or delimiters != lines * (len(header) - 1):
        return None  # a blank line, a short row: the row reader says where
    _check_header(header, str(path))
    for name in header:
        column = table[name]
        if column.dtype.kind in "iu" and (np.abs(column.to_numpy(np.float64)) > 2 ** 53).any():
            table[name] = column.astype(np.float64)  # past 2**53, as float() reads it
    if rows and all(table[name].dtype.kind not in "iuf" for name in header) and \
            table.apply(lambda c: c.str.strip() == "").all(axis=1).any():
        return None  # a row of blank cells, which the row reader skips
    return table, np.arange(2, rows + 2, dtype=np.int64)


def _joined(chunks: list[pd.DataFrame], header: list[str]) -> pd.DataFrame:
    """The chunks as one table, joined a column at a time (each chunk's column let go as
    soon as it is joined)."""
    if len(chunks) == 1:
        return chunks[0]
    columns = {}
    for name in header:
        columns[name] = pd.concat([chunk[name] for chunk in chunks], ignore_index=True)
        for chunk in chunks:
            del chunk[name]
    return pd.DataFrame(columns, copy=False)


def _read_rows(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Read every cell as text, row by row; return the table and the file line where each
    row starts."""
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
