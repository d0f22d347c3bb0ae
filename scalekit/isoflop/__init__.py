"""Compute-optimal allocation three ways (Hoffmann et al. 2022) and plans built on it.

* approach 1 — the envelope of learning curves (:class:`Envelope`);
* approach 2 — IsoFLOP profiles (:class:`IsoFLOPProfiles`);
* approach 3 — the parametric Chinchilla law (:class:`ParametricOptimum`);
* :func:`comparison_table`, :func:`spread_explained` — the approaches side by side;
* :func:`plan_for_loss`, :func:`compare_allocation` — plans from a fitted law (the plan
  for a compute budget is :func:`scalekit.fit.plan_for_compute`; all three live in ``scalekit.fit``);
* :func:`compare` — is a variant better at scale: the compute multiplier of one sweep over
  another, with paired-bootstrap intervals (:class:`Comparison`); :func:`isoflop_pair`
  draws a synthetic pair with a known multiplier;
* :func:`compare_metrics` — the allocations of several metrics compared, paired
  (:class:`MetricComparison`); :func:`isoflop_sweep` draws a synthetic sweep to test it.
"""

from scalekit.isoflop._analysis import NAMES, IsoFLOPReport, run_isoflop
from scalekit.isoflop._approach1 import Envelope
from scalekit.isoflop._approach2 import PROFILES, IsoFLOPProfiles
from scalekit.isoflop._approach3 import ParametricOptimum
from scalekit.isoflop._budgets import assign_budgets, round_significant
from scalekit.isoflop._compare import comparison_table, spread_explained
from scalekit.fit import compare_allocation, plan_for_loss
from scalekit.isoflop._points import CONVENTIONS
from scalekit.isoflop._multiplier import (FRONTIER_LAWS, VERDICTS, Comparison, compare,
                                          decide_line, exponent_line, target_line)
from scalekit.isoflop._synthetic_pair import SyntheticPair, isoflop_pair
from scalekit.isoflop._per_metric import MetricComparison, compare_metrics, pair_line
from scalekit.isoflop._powerfit import PowerLawFit, fit_power_law
from scalekit.isoflop._synthetic_metrics import isoflop_sweep

__all__ = ["Envelope", "IsoFLOPProfiles", "MetricComparison", "ParametricOptimum", "PowerLawFit",
           "assign_budgets", "compare_allocation", "compare_metrics", "comparison_table",
           "fit_power_law", "isoflop_sweep", "plan_for_loss", "round_significant",
           "spread_explained", "IsoFLOPReport", "NAMES", "pair_line", "run_isoflop",
           "CONVENTIONS", "PROFILES", "Comparison", "FRONTIER_LAWS", "SyntheticPair", "VERDICTS",
           "compare", "decide_line", "exponent_line", "isoflop_pair", "target_line"]
