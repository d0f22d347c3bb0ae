"""JSON Lines files: one JSON object per point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.errors import InputError

def read_jsonl_table(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """One JSON object per line; return the table and the file line of every row."""
    records, lines = [], []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"the file is not UTF-8 text ({exc.reason})", source=str(path)) from None
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 is text
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=str(path),
                             line=number) from None
        except RecursionError:
            raise InputError("the JSON is nested too deeply; a record holds numbers and text, "
                             "not nested lists", source=str(path), line=number) from None
        if not isinstance(record, dict):
            raise InputError("each line must be a JSON object", source=str(path), line=number)
        records.append(record)
        lines.append(number)
    if not records:
        raise InputError("the file is empty", source=str(path))
    table = pd.DataFrame.from_records(records)
    return table.astype(object).where(table.notna(), None), np.asarray(lines)
