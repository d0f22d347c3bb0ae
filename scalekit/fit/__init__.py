"""The fit engine: robust multi-start fitting of laws, uncertainty, model comparison.

The face loads no pandas or scipy.stats (``from scalekit.fit import fit_law`` stays light);
the profile likelihood, which needs scipy, loads when first used.
"""

from __future__ import annotations

from scalekit.fit._bootstrap import bootstrap_fits, resample_counts
from scalekit.fit._plans import (EXTRAPOLATION_WARN, ComputePlan, compare_allocation, optimal_params,
                                 plan_for_compute, plan_for_loss)
from scalekit.fit._engine import RESAMPLE, fit_law
from scalekit.fit._diagnose import fit_diagnostics
from scalekit.fit._frame import fit_frame, last_points, prepare_fit, resolve_law
from scalekit.fit._inputs import law_inputs
from scalekit.fit._least_squares import least_squares_batch
from scalekit.fit._multistart import minimize_batch, multistart
from scalekit.fit._objective import log_residuals, log_value_and_jacobian
from scalekit.fit._plan_report import PlanReport
from scalekit.fit._prior import fit_with_prior
from scalekit.fit._result import FitResult
from scalekit.fit._robust import LOSSES, irls_weights, robust_scale
from scalekit.fit._select import compare_laws
from scalekit.fit._uncertainty import natural_stderr, quantile, wald_intervals
from scalekit.lazy import lazy_names

__all__ = ["FitResult", "PlanReport", "compare_laws", "fit_frame", "fit_law", "fit_with_prior",
           "last_points",
           "plan_for_compute", "plan_for_loss", "compare_allocation", "ComputePlan",
           "prepare_fit", "resolve_law",
           # for the other packages and the CLI
           "EXTRAPOLATION_WARN", "LOSSES", "RESAMPLE", "bootstrap_fits", "fit_diagnostics",
           "irls_weights", "law_inputs", "least_squares_batch", "log_residuals", "log_value_and_jacobian",
           "minimize_batch", "multistart", "natural_stderr", "optimal_params", "quantile",
           "resample_counts", "robust_scale", "wald_intervals"]

_LAZY = {"profile_parameter": "scalekit.fit._profile"}
__all__ += list(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY)
