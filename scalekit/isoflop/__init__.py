"""Compute-optimal allocation three ways (Hoffmann et al. 2022) and plans built on it.

* approach 1 — the envelope of learning curves (:class:`Envelope`);
* approach 2 — IsoFLOP profiles (:class:`IsoFLOPProfiles`);
* approach 3 — the parametric Chinchilla law (:class:`ParametricOptimum`).
"""

from scalekit.isoflop.approach2 import IsoFLOPProfiles
from scalekit.isoflop.budgets import assign_budgets, round_significant
from scalekit.isoflop.powerfit import PowerLawFit, fit_power_law

__all__ = ["IsoFLOPProfiles", "PowerLawFit", "assign_budgets", "fit_power_law",
           "round_significant"]
