"""The fit engine: robust multi-start fitting of laws, uncertainty, model comparison."""

from scalekit.fit.engine import fit_law
from scalekit.fit.result import FitResult
from scalekit.fit.select import compare_laws

__all__ = ["FitResult", "compare_laws", "fit_law"]
