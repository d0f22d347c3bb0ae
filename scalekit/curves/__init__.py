"""Learning curves: read them from files, validate them, keep them in a store.

- :func:`read_curves` reads CSV (long or per run), W&B wide CSV, JSONL, Parquet,
  TensorBoard folders, W&B offline runs, MLflow stores and Optuna studies into
  validated :class:`Curves`: the tidy curve frame with the reader's notes,
  diagnostics, source lines and which metric it took where several exist.
- :class:`CurveStore` keeps runs and points in a SQLite file (WAL), with
  all-or-nothing imports and safe concurrent appends.
- :func:`write_curves` writes a tidy frame in any of those formats.

The face is lazy: pandas and the readers load when a name is first used, so the CLI can
check its files and a store's location (:func:`is_server_url`) before importing them.
"""

from __future__ import annotations

from scalekit.checks import check_local_input
from scalekit.curves._database import display, is_server_url, open_database
from scalekit.lazy import lazy_names

_LAZY = {
    "copy_store": "scalekit.curves._copy",
    "Curves": "scalekit.curves._curve_set",
    "DUPLICATES": "scalekit.curves.readers",
    "FORMATS": "scalekit.curves.readers",
    "read_curves": "scalekit.curves.readers",
    "ladder_frame": "scalekit.curves.readers._ladder",
    "ladder_from_store": "scalekit.curves.readers._ladder",
    "read_ladder": "scalekit.curves.readers._ladder",
    "CurveStore": "scalekit.curves._store",
    "ImportSummary": "scalekit.curves._store",
    "TABLE_FORMATS": "scalekit.curves._writers",
    "output_format": "scalekit.curves._writers",
    "write_curves": "scalekit.curves._writers",
    "escape_cell": "scalekit.curves.readers._csv_file",
}

__all__ = ["check_local_input", "display", "is_server_url", "open_database", *_LAZY]

__getattr__ = lazy_names(__name__, _LAZY)
