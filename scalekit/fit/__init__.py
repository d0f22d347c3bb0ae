"""The fit engine: robust multi-start fitting of laws, uncertainty, model comparison."""

from scalekit.fit.compute_optimal import plan_for_compute
from scalekit.fit.engine import fit_law
from scalekit.fit.frame import fit_frame, prepare_fit
from scalekit.fit.plan_report import PlanReport
from scalekit.fit.result import FitResult
from scalekit.fit.select import compare_laws

__all__ = ["FitResult", "PlanReport", "compare_laws", "fit_frame", "fit_law", "plan_for_compute", "prepare_fit"]
