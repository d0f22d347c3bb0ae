"""The :class:`Curves` type: a tidy curve frame with what its reader learnt about it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from scalekit.curves._validate import SourceLines
from scalekit.diagnostics import Diagnostic

if TYPE_CHECKING:  # the readers build Curves: importing them here would be a circle
    from scalekit.curves.readers._metric_choice import MetricChoice


@dataclass(frozen=True, eq=False)
class Curves:
    """Learning curves as read: the tidy frame and what travels with it to the analyses.

    Attributes
    ----------
    frame : DataFrame
        One row per logged point: ``run``, ``step``, the metric, and what the source
        has of ``compute``, ``tokens``, ``wall_time``, run columns (``params``, …),
        further metric columns and configuration columns.
    metric : str
        The column of the metric asked for (``loss``).
    metrics : tuple of str
        Every metric column (the metric first); the other columns are points' or
        runs' attributes.
    config_columns : tuple of str
        The run configuration columns (written back as ``config.<name>``).
    notes : tuple of str
        What the reader derived, chose or ignored, one line each.
    diagnostics : tuple of Diagnostic
        What the reader found worth a diagnostic (the ``metric_choice`` of a source
        with several losses).
    metric_choice : MetricChoice or None
        Which name in the source the metric is, and over which others.
    source : str or None
        The file, folder or URI read.
    format : str or None
        The format it was read as (``csv``, ``mlflow``, …).
    source_lines : SourceLines or None
        The file line of each (run, step), for a check made later to name it.
    """

    frame: pd.DataFrame
    metric: str = "loss"
    metrics: tuple[str, ...] = ()
    config_columns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    metric_choice: MetricChoice | None = None
    source: str | None = None
    format: str | None = None
    source_lines: SourceLines | None = field(default=None, repr=False)

    @classmethod
    def of(cls, data: Curves | pd.DataFrame) -> Curves:
        """``data`` as Curves: a Curves as it is, a plain DataFrame with nothing noted."""
        return data if isinstance(data, Curves) else cls(data)

    def with_frame(self, frame: pd.DataFrame) -> Curves:
        """The same notes, diagnostics and source around another frame (a subset of this)."""
        return replace(self, frame=frame)

    def noted(self, notes: list[str] | tuple[str, ...]) -> Curves:
        """These curves with ``notes`` said before their own."""
        return replace(self, notes=(*notes, *self.notes)) if notes else self

    def unsaid_notes(self) -> list[str]:
        """The notes less the metric choice's where a ``metric_choice`` diagnostic says it
        (the choice is said once, by the diagnostic)."""
        choice = self.metric_choice
        if choice is None or not any(d.code == "metric_choice" for d in self.diagnostics):
            return list(self.notes)
        return [note for note in self.notes if note != choice.note()]

    def to_frame(self) -> pd.DataFrame:
        """The tidy frame."""
        return self.frame

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        runs = self.frame["run"].nunique() if "run" in self.frame else 0
        where = f", from {self.source!r}" if self.source else ""
        return f"Curves({len(self.frame)} points of {runs} runs, metric {self.metric!r}{where})"
