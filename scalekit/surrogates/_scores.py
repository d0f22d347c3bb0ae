"""The scores of forecast methods as a result: the table, with the result protocol."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from scalekit.checks import check_choice
from scalekit.formatting import format_number
from scalekit.results import ResultProtocol, frame_from_records

#: What scored the methods, and the column that labels each row's tasks.
KINDS = {"evaluation": "subset", "benchmark": "group"}


@dataclass(frozen=True, repr=False)
class ForecastScores(ResultProtocol):
    """Scores of forecast methods on tasks: one row per method and label of the tasks.

    Attributes
    ----------
    table : DataFrame
        The scores (see :func:`scalekit.surrogates._evaluate.evaluate` and
        :func:`~scalekit.surrogates._evaluate.holdout_benchmark` for the columns).
    kind : {"evaluation", "benchmark"}
        ``evaluation``: curves cut and forecast (rows per ``subset``); ``benchmark``: the
        protocol of Alabdulmohsin et al. (2022) (rows per ``group``, against ``reference``).
    reference : str, optional
        The benchmark's reference method.
    """

    table: pd.DataFrame
    kind: str
    reference: str | None = None

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, tuple(KINDS))

    @property
    def label(self) -> str:
        """The column that labels the tasks of each row."""
        return KINDS[self.kind]

    def to_dict(self) -> dict:
        """``kind``, ``reference`` and the table's rows (inverse of :meth:`from_dict`)."""
        return {"kind": self.kind, "reference": self.reference,
                "evaluation": self.table.to_dict(orient="records")}

    @classmethod
    def from_dict(cls, data: dict) -> ForecastScores:
        return cls(frame_from_records(data["evaluation"]), data["kind"], data.get("reference"))

    def to_frame(self) -> pd.DataFrame:
        """The scores, one row per method and label of the tasks."""
        return self.table.copy()

    def _summary_title(self) -> str:
        methods = self.table["method"].nunique()
        if self.kind == "benchmark":
            return (f"Forecast benchmark (Alabdulmohsin et al. 2022) of {methods} methods "
                    f"against {self.reference}")
        return f"Forecast evaluation of {methods} methods"

    def _summary_sections(self):
        scores = [c for c in self.table.columns if c not in ("method", self.label)]
        return [(f"{self.label.capitalize()} {name}", [
            (row["method"], ", ".join(f"{c} {format_number(row[c])}" for c in scores))
            for _, row in rows.iterrows()])
            for name, rows in self.table.groupby(self.label, sort=False)]

    def _repr_fields(self) -> dict:
        return {"kind": self.kind, "methods": self.table["method"].nunique(),
                f"{self.label}s": self.table[self.label].nunique()}
