"""Learning curves: read them from files, validate them, keep them in a store.

- :func:`read_curves` reads CSV (long or per run), W&B wide CSV, JSONL, Parquet,
  TensorBoard folders, W&B offline runs, MLflow stores and Optuna studies into
  validated :class:`Curves`: the tidy curve frame with the reader's notes,
  diagnostics, source lines and which metric it took where several exist.
- :class:`CurveStore` keeps runs and points in a SQLite file (WAL), with
  all-or-nothing imports and safe concurrent appends.
- :func:`write_curves` writes a tidy frame in any of those formats.
"""

from scalekit.curves.curve_set import Curves
from scalekit.curves.readers import FORMATS, read_curves
from scalekit.curves.store import CurveStore, ImportSummary
from scalekit.curves.writers import write_curves

__all__ = ["FORMATS", "CurveStore", "Curves", "ImportSummary", "read_curves", "write_curves"]
