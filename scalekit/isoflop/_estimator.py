"""What the three allocation approaches share: points, FLOP convention, fitted check,
diagnostics of the exponents and of extrapolation, and the result protocol (JSON and
back, summary, one-line repr)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.diagnostics import Diagnostic
from scalekit.errors import NotFittedError
from scalekit.fit import EXTRAPOLATION_WARN
from scalekit.formatting import format_interval, format_number
from scalekit.isoflop._points import CONVENTIONS, convention_text, isoflop_points
from scalekit.isoflop._powerfit import PowerLawFit, allocation_json
from scalekit.results import ResultProtocol


class AllocationEstimator(ResultProtocol):
    """Base of :class:`Envelope`, :class:`IsoFLOPProfiles` and :class:`ParametricOptimum`.

    Subclasses set ``convention`` and ``flops_per_param_token``; ``fit`` sets
    ``params_law_``, ``tokens_law_``, ``warnings_``, ``diagnostics_``, ``notes_`` and
    ``compute_range_`` (the least and most compute the fitted line rests on).

    A fitted estimator is also a result: ``to_dict()`` writes what it found and its
    settings, ``from_dict()`` rebuilds a fitted estimator from that (the points it was
    fitted to and the bootstrap's working arrays are not part of it), ``summary()``
    and the one-line ``repr`` say what it found.
    """

    #: Title of the summary.
    TITLE = ""

    def check_settings(self) -> None:
        """Reject settings outside their range (before any data is read): the ones every
        approach has; subclasses add theirs."""
        check_number("n_boot", self.n_boot, low=0, integer=True)
        check_number("ci_level", self.ci_level, low=0, high=1, low_open=True, high_open=True)
        check_choice("convention", self.convention, CONVENTIONS)
        check_number("flops_per_param_token", self.flops_per_param_token, low=0, low_open=True)

    def convention_text(self) -> str:
        return convention_text(self.convention, self.flops_per_param_token)

    def _points(self, data, source: str | None) -> pd.DataFrame:
        """The tidy points of ``data`` under the FLOP convention; their notes go to ``notes_``."""
        points = isoflop_points(data, convention=self.convention,
                                flops_per_param_token=self.flops_per_param_token, source=source)
        self.notes_ = list(points.notes)
        return points.frame

    def _check_fitted(self) -> None:
        if not hasattr(self, "params_law_"):
            raise NotFittedError.for_estimator(self)

    def extrapolation(self, target_compute: float) -> list[Diagnostic]:
        """An ``extrapolation`` diagnostic when ``target_compute`` lies outside ``compute_range_``.

        A warning beyond the factor the plans use (``EXTRAPOLATION_WARN``), else a note.
        """
        self._check_fitted()
        lo, hi = self.compute_range_
        if lo <= target_compute <= hi:
            return []
        factor = target_compute / hi if target_compute > hi else lo / target_compute
        side = "beyond the largest" if target_compute > hi else "below the smallest"
        severity = "warning" if factor > EXTRAPOLATION_WARN else "info"
        return [Diagnostic("extrapolation", severity,
                           f"the target compute {target_compute:.3g} FLOPs is {factor:.3g}x "
                           f"{side} compute the fit rests on ({lo:.3g} to {hi:.3g}); N* and D* "
                           "there assume the power laws hold that far, which a run nearer the "
                           "target would check", value=float(factor))]

    def _exponent_diagnostics(self) -> list[Diagnostic]:
        """``exponent_implausible`` for a or b outside (0, 1): under C = k·N·D both lie there."""
        out = []
        for name, law, other in (("a", self.params_law_, "params"),
                                 ("b", self.tokens_law_, "tokens")):
            value = law.exponent
            if np.isfinite(value) and 0 < value < 1:
                continue
            out.append(Diagnostic(
                "exponent_implausible", "warning",
                f"{name} = {value:.3g} lies outside (0, 1), so the optimal {other} would not grow "
                f"with compute as both N* and D* must; the fit does not describe the data — "
                "read the per-budget notes and fix the sampling or the points used",
                param=name, value=float(value)))
        return out

    def _allocation_json(self, *, budgets: pd.DataFrame | None = None, **extra) -> dict:
        """:func:`allocation_json` of the fitted laws, ``extra`` then the convention; the
        diagnostics, and what :meth:`from_dict` reads: settings, both laws, compute range
        and notes."""
        body = allocation_json(self.params_law_, self.tokens_law_, warnings=self.warnings_,
                               budgets=budgets,
                               extra={**extra, "convention": self.convention_text()})
        body["diagnostics"] = [d.to_dict() for d in self.diagnostics_]
        body.update(settings=self.settings(), params_law=self.params_law_.to_dict(),
                    tokens_law=self.tokens_law_.to_dict(),
                    compute_range=list(self.compute_range_), notes=list(self.notes_))
        return body

    @classmethod
    def from_dict(cls, data: dict) -> AllocationEstimator:
        """A fitted estimator rebuilt from :meth:`to_dict` (after a JSON round trip)."""
        model = cls(**data["settings"])
        model.params_law_ = PowerLawFit.from_dict(data["params_law"])
        model.tokens_law_ = PowerLawFit.from_dict(data["tokens_law"])
        model.compute_range_ = tuple(float(c) for c in data["compute_range"])
        model.warnings_ = list(data["warnings"])
        model.diagnostics_ = [Diagnostic.from_dict(d) for d in data["diagnostics"]]
        model.notes_ = list(data["notes"])
        model._restore(data)
        return model

    def _restore(self, data: dict) -> None:
        """Set the fitted attributes of the subclass from :meth:`to_dict`."""
        raise NotImplementedError

    def to_frame(self) -> pd.DataFrame:
        """The per-budget optima where the approach finds them (approach 2's budgets,
        approach 1's frontier), else the allocation's exponents and coefficients
        (``quantity``, ``value``, ``ci_low``, ``ci_high``)."""
        for name in ("budgets_", "frontier_"):
            if hasattr(self, name):
                return getattr(self, name).copy()
        return self.exponents_frame()

    def exponents_frame(self) -> pd.DataFrame:
        """``a``, ``b``, ``k_N``, ``k_D``: ``quantity``, ``value``, ``ci_low``, ``ci_high``."""
        self._check_fitted()
        rows = [(name, value, *ci) for name, value, ci in (
            ("a", self.params_law_.exponent, self.params_law_.exponent_ci),
            ("b", self.tokens_law_.exponent, self.tokens_law_.exponent_ci),
            ("k_N", self.params_law_.coef, self.params_law_.coef_ci),
            ("k_D", self.tokens_law_.coef, self.tokens_law_.coef_ci))]
        return pd.DataFrame(rows, columns=["quantity", "value", "ci_low", "ci_high"])

    def _summary_title(self) -> str:
        return self.TITLE + ("" if hasattr(self, "params_law_") else " (not fitted)")

    def _summary_sections(self):
        settings = [("Settings", list(self.settings().items()))]
        if not hasattr(self, "params_law_"):
            return settings
        level = f"{self.ci_level:.0%}"
        rows = [(name, f"{format_number(value)}  {level} CI {format_interval(ci)}")
                for name, value, ci in (
                    ("a", self.params_law_.exponent, self.params_law_.exponent_ci),
                    ("b", self.tokens_law_.exponent, self.tokens_law_.exponent_ci),
                    ("k_N", self.params_law_.coef, self.params_law_.coef_ci),
                    ("k_D", self.tokens_law_.coef, self.tokens_law_.coef_ci))]
        rows += [("ci_method", self.params_law_.ci_method),
                 ("compute range", format_interval(self.compute_range_)),
                 ("FLOPs", self.convention_text())]
        notes = [f"note: {n}" for n in self.notes_] + [d.line() for d in self.diagnostics_]
        return [("Allocation", rows), *self._fitted_sections(), *settings,
                ("Notes and warnings", notes)]

    def _fitted_sections(self) -> list:
        """The approach's own sections, between the allocation and the settings."""
        raise NotImplementedError

    def _repr_fields(self) -> dict:
        if not hasattr(self, "params_law_"):
            return {"fitted": "no"}
        return {"a": self.params_law_.exponent, "b": self.tokens_law_.exponent,
                "k_N": self.params_law_.coef, "k_D": self.tokens_law_.coef}
