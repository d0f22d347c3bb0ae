"""Learning curves: read them from files, validate them, keep them in a store.

- :func:`read_curves` reads CSV (long or per run), W&B wide CSV, JSONL, Parquet,
  TensorBoard folders, W&B offline runs, MLflow stores and Optuna studies into
  validated :class:`Curves`: the tidy curve frame with the reader's notes,
  diagnostics, source lines and which metric it took where several exist.
- :class:`CurveStore` keeps runs and points in a SQLite file (WAL), with
  all-or-nothing imports and safe concurrent appends.
- :func:`write_curves` writes a tidy frame in any of those formats.
"""

from scalekit.curves._copy import copy_store
from scalekit.curves._curve_set import Curves
from scalekit.curves._database import display, is_server_url, open_database
from scalekit.curves.readers import DUPLICATES, FORMATS, check_local_input, read_curves
from scalekit.curves.readers._csv_file import escape_cell
from scalekit.curves.readers._ladder import ladder_frame, ladder_from_store, read_ladder
from scalekit.curves._store import CurveStore, ImportSummary
from scalekit.curves._writers import TABLE_FORMATS, output_format, write_curves

__all__ = ["FORMATS", "CurveStore", "Curves", "ImportSummary", "read_curves", "write_curves",
           "check_local_input", "copy_store", "display", "is_server_url", "ladder_frame",
           "ladder_from_store", "output_format", "read_ladder", "DUPLICATES", "TABLE_FORMATS",
           "open_database", "escape_cell"]
