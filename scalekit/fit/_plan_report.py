"""The :class:`PlanReport` result: a fitted law and each plan asked of it, as one result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scalekit.diagnostics import Diagnostic
from scalekit.fit._plans import ComputePlan
from scalekit.fit._result import FitResult
from scalekit.results import ResultProtocol

#: The questions a plan answers, by the key its plan has in the report.
QUESTIONS = {"by_compute": "compute", "by_loss": "loss", "compare": "compared run"}


@dataclass
class PlanReport(ResultProtocol):
    """What ``scalekit plan`` answers: the law, then the plan for a compute budget
    (``by_compute``), for a target loss (``by_loss``) and against a given (N, D)
    (``compare``), those asked.

    Attributes
    ----------
    fit : FitResult
        The law the plans come from.
    convention : str
        The FLOP rule of the plans (``C = 6·N·D``).
    by_compute, by_loss, compare : ComputePlan or None
        The plans asked for.
    compare_summary : str or None
        The comparison in one sentence.
    notes : list of str
        How the points were chosen and read.
    diagnostics : list of Diagnostic
        The fit's (the reader's first), then each plan's.
    """

    fit: FitResult
    convention: str
    by_compute: ComputePlan | None = None
    by_loss: ComputePlan | None = None
    compare: ComputePlan | None = None
    compare_summary: str | None = None
    notes: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def plans(self) -> dict[str, ComputePlan]:
        """The plans asked for, by key (``by_compute``, ``by_loss``, ``compare``)."""
        return {key: getattr(self, key) for key in QUESTIONS if getattr(self, key) is not None}

    def verdict(self) -> str:
        """One line: whether a warning stands against the plans."""
        serious = [d for d in self.diagnostics if d.severity != "info"]
        codes = sorted({d.code for d in serious})
        return ("verdict: no warnings" if not serious else
                f"verdict: {len(serious)} warning{'s' if len(serious) > 1 else ''} "
                f"({', '.join(codes)}): do not use the plan "
                "as it stands")

    def to_dict(self) -> dict[str, Any]:
        fit = self.fit
        body: dict[str, Any] = {
            "convention": self.convention, "notes": list(self.notes),
            "law": {"name": fit.law.name, **fit.values},
            **{key: fit.derived[key] for key in ("a", "b", "G") if key in fit.derived},
            "derived_ci": {key: list(v) for key, v in fit.derived_ci.items()}}
        body.update({key: plan.to_dict() for key, plan in self.plans().items()})
        if self.compare_summary is not None:
            body["compare_summary"] = self.compare_summary
        body["diagnostics"] = [d.to_dict() for d in self.diagnostics]
        body["warnings"] = [d.message for d in self.diagnostics if d.severity != "info"]
        body["verdict"] = self.verdict()
        body["fit"] = fit.to_dict()
        return body

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanReport:
        plans = {key: ComputePlan.from_dict(data[key]) for key in QUESTIONS if key in data}
        return cls(FitResult.from_dict(data["fit"]), data["convention"], **plans,
                   compare_summary=data.get("compare_summary"), notes=list(data["notes"]),
                   diagnostics=[Diagnostic.from_dict(d) for d in data["diagnostics"]])

    def to_frame(self):
        """One row per plan: ``question`` (compute, loss, compared run) and its numbers."""
        import pandas as pd

        frames = [plan.to_frame().assign(question=QUESTIONS[key])
                  for key, plan in self.plans().items()]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["question"])
        return frame[["question", *[c for c in frame.columns if c != "question"]]]

    def _summary_title(self) -> str:
        return f"Compute plan from the {self.fit.law.name} law ({self.convention})"

    def _summary_sections(self):
        return [*((f"Plan by {QUESTIONS[key]}", [(k, v) for k, v in plan.items()
                                                  if isinstance(v, (int, float))])
                  for key, plan in self.plans().items()),
                ("Law", [(name, value) for name, value in self.fit.values.items()]),
                ("Notes and warnings", [*self.notes, *(d.line() for d in self.diagnostics),
                                        self.verdict()])]

    def _repr_fields(self) -> dict:
        return {"law": self.fit.law.name, "plans": ", ".join(self.plans()) or "none"}
