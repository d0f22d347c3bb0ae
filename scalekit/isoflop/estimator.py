"""What the three allocation approaches share: points, FLOP convention, fitted check, JSON."""

from __future__ import annotations

import pandas as pd

from scalekit.errors import NotFittedError
from scalekit.isoflop.points import convention_text, isoflop_points
from scalekit.isoflop.powerfit import allocation_json


class AllocationEstimator:
    """Base of :class:`Envelope`, :class:`IsoFLOPProfiles` and :class:`ParametricOptimum`.

    Subclasses set ``convention`` and ``flops_per_param_token``; ``fit`` sets
    ``params_law_``, ``tokens_law_`` and ``warnings_``.
    """

    def convention_text(self) -> str:
        return convention_text(self.convention, self.flops_per_param_token)

    def _points(self, data, source: str | None) -> pd.DataFrame:
        """The tidy points of ``data`` under the FLOP convention; their notes go to ``notes_``."""
        points = isoflop_points(data, convention=self.convention,
                                flops_per_param_token=self.flops_per_param_token, source=source)
        self.notes_ = list(points.attrs["notes"])
        return points

    def _check_fitted(self) -> None:
        if not hasattr(self, "params_law_"):
            raise NotFittedError.for_estimator(self)

    def _allocation_json(self, *, budgets: pd.DataFrame | None = None, **extra) -> dict:
        """:func:`allocation_json` of the fitted laws, ``extra`` then the convention."""
        return allocation_json(self.params_law_, self.tokens_law_, warnings=self.warnings_,
                               budgets=budgets,
                               extra={**extra, "convention": self.convention_text()})
