"""Parquet files (through pandas and pyarrow)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from scalekit.errors import InputError

def read_parquet_table(path: Path) -> pd.DataFrame:
    """The file's table, with index columns (often run, step) turned into columns."""
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
        raise InputError(f"cannot read the file as Parquet ({exc})", source=str(path)) from None
    named = [n for n in table.index.names if n is not None and n not in table.columns]
    if named:  # pandas keeps a frame's index (often run, step) as index columns
        table = table.reset_index(level=named)
    if table.shape[1] == 0:
        raise InputError("the file is empty", source=str(path))
    return table.reset_index(drop=True)
