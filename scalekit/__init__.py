"""scalekit: read learning curves, fit scaling laws with honest uncertainty, plan compute.

The top-level namespace is light: subpackages are imported on first use so that
``scalekit --help`` stays instant and torch is never imported outside
:mod:`scalekit.train`.
"""

from __future__ import annotations

from scalekit._version import __version__
from scalekit.errors import InputError, NotFittedError, ScalekitError
from scalekit.lazy import lazy_names

_LAZY = {
    "CurveStore": "scalekit.curves",
    "read_curves": "scalekit.curves",
    "Law": "scalekit.laws",
    "get_law": "scalekit.laws",
    "law_from_expression": "scalekit.laws",
    "fit_law": "scalekit.fit",
    "fit_frame": "scalekit.fit",
    "plan_for_compute": "scalekit.fit",
    "FitResult": "scalekit.fit",
    "compare": "scalekit.isoflop",
    "flops_per_token": "scalekit.flops",
}

__all__ = ["__version__", "InputError", "NotFittedError", "ScalekitError", *_LAZY]

__getattr__ = lazy_names(__name__, _LAZY)
