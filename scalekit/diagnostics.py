"""Diagnostics: why a result should not be believed, and what to do about it.

Every result carries a list of :class:`Diagnostic`; the JSON report writes it
as ``diagnostics`` and the terminal shows the same lines under "Notes and
warnings". The codes are documented in one table, ``docs/diagnostics.md``;
:data:`CODES` holds the same names, and a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEVERITIES = ("info", "warning", "error")

#: Every diagnostic code, with the one-line meaning documented in docs/diagnostics.md.
CODES = {
    "not_identified": "the data cannot pin a parameter",
    "on_bound": "a parameter sits on a bound of its search range",
    "extrapolation": "a prediction or plan lies beyond the range of the data",
    "profile_misfit": "an IsoFLOP parabola does not describe its budget",
    "exponent_implausible": "a fitted exponent lies outside what the data supports",
    "budget_skipped": "an IsoFLOP budget was left out of the fit",
    "metric_choice": "which of several metrics was taken as the loss",
    "few_points": "too few points for the result to be trusted",
    "prior_fit": "no more points than parameters: the fit is the most probable law under a weak "
                 "prior, not a fit to the data alone",
    "outliers_dropped": "points were left out of the fit",
    "not_converged": "the optimiser, or some bootstrap resamples, found no optimum",
    "derived_undefined": "a derived quantity is not finite for some bootstrap resamples",
    "last_points_narrow": "the runs' last points span too little of an input; all checkpoints span more",
    "no_optimum": "an optimum, shape or critical value is not in the data (a test does not reject "
                  "the monotone law, or it lies outside the data), so none is stated",
    "optimum_at_edge": "a compute-optimal size, or an end of its interval, is the edge of the "
                       "sizes searched: the law has no interior optimum there",
    "asymptote_above_data": "a fitted floor lies above a loss the data or the target run "
                            "already reached",
    "run_skipped": "a run was left out of a forecast",
    "metrics_indistinguishable": "the interval of two metrics' difference covers 0: the data "
                                 "cannot tell them apart",
    "not_decided": "the interval of a compute multiplier holds 1: the data cannot tell whether "
                   "the variant is better",
    "frontier_misfit": "a compute frontier misses its budgets' least losses by more than their "
                       "noise",
    "flop_count_mismatch": "an arm's counted compute and 6·N·D differ by more than 10%",
}


@dataclass(frozen=True)
class Diagnostic:
    """One finding about a result.

    Parameters
    ----------
    code : str
        One of :data:`CODES`.
    severity : {"info", "warning", "error"}
        ``warning`` and ``error`` mean the number concerned should not be believed as it stands.
    message : str
        One sentence that says what was found and names the remedy.
    param, budget, run, value : optional
        What the finding applies to: a parameter name, a compute budget, a run name, a value.
    """

    code: str
    severity: str
    message: str
    param: str | None = None
    budget: float | None = None
    run: str | None = None
    value: Any = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"The value of `code` is {self.code!r}, but must be one of {sorted(CODES)}.")
        if self.severity not in SEVERITIES:
            raise ValueError(f"The value of `severity` is {self.severity!r}, but must be one of "
                             f"{list(SEVERITIES)}.")

    def to_dict(self) -> dict[str, Any]:
        """The diagnostic as a JSON-ready dict; fields that do not apply are left out."""
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        for key in ("param", "budget", "run", "value"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnostic:
        """Inverse of :meth:`to_dict`."""
        return cls(**{key: data.get(key) for key in ("code", "severity", "message", "param",
                                                     "budget", "run", "value")})

    def line(self) -> str:
        """The terminal line: severity and message."""
        return f"{self.severity}: {self.message}"


#: Codes from the worst to the mildest: the order a report shows its warnings in.
WORST_FIRST = ("last_points_narrow", "not_converged", "not_identified", "no_optimum",
               "asymptote_above_data", "optimum_at_edge", "flop_count_mismatch", "derived_undefined",
               "on_bound", "exponent_implausible", "frontier_misfit", "profile_misfit", "extrapolation",
               "metrics_indistinguishable", "not_decided", "prior_fit", "few_points",
               "budget_skipped", "run_skipped", "outliers_dropped", "metric_choice")


def worst_first(diagnostics) -> list[Diagnostic]:
    """``diagnostics`` sorted errors first, then warnings, then infos; within a severity by
    :data:`WORST_FIRST` (a stable sort: equal ones keep their order)."""
    return sorted(diagnostics, key=lambda d: (-SEVERITIES.index(d.severity),
                                              WORST_FIRST.index(d.code)))


def digest(notes, diagnostics, *, limit: int | None = 3) -> tuple[list[str], list[Diagnostic], int]:
    """What a terminal report shows of its notes and diagnostics.

    Returns the notes and the info diagnostics' messages (in that order; a report
    collapses them to one line), the warnings and errors to show (worst first, at
    most ``limit``; all when ``limit`` is None) and how many more there are. The
    JSON report keeps them all.
    """
    infos = [*notes, *(d.message for d in diagnostics if d.severity == "info")]
    serious = worst_first(d for d in diagnostics if d.severity != "info")
    shown = serious if limit is None else serious[:limit]
    return infos, shown, len(serious) - len(shown)
