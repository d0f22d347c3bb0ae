"""Synthetic IsoFLOP sweeps with several metrics of known D* exponents (for tests and the
per-metric bench): each metric's loss is a parabola in log10 N around its own optimum
``N*_m(C) = 0.1·√C_mid·(C / C_mid)^(1 - b_m)`` (C_mid the geometric middle of the budgets,
where the metrics' optima meet; so ``D*_m ∝ C^b_m`` under C = 6·N·D), plus Gaussian noise."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def isoflop_sweep(exponents: Sequence[float], *, seed: int,
                  budgets: Sequence[float] = (1e17, 3e17, 1e18, 3e18, 1e19), sizes: int = 9,
                  span: float = 1.0, curvature: float = 0.1, noise: float = 0.002
                  ) -> pd.DataFrame:
    """One sweep: ``sizes`` model sizes per budget, log-spaced over ±``span`` decades around
    the geometric mean of the metrics' optima; columns compute, params, tokens, run and
    ``m1``, ``m2``, … (one per exponent b)."""
    rng = np.random.default_rng(seed)
    rows = []
    log_mid = np.log10(budgets).mean()
    for c in budgets:
        log_opt = np.array([log_mid / 2 - 1 + (1 - b) * (np.log10(c) - log_mid)
                            for b in exponents])
        for log_n in log_opt.mean() + np.linspace(-span, span, sizes):
            n = 10.0 ** log_n
            row = {"run": f"C{c:.0e}_N{n:.3e}", "compute": c, "params": n, "tokens": c / (6 * n)}
            for m, opt in enumerate(log_opt, 1):
                row[f"m{m}"] = 2.0 + curvature * (log_n - opt) ** 2 + noise * rng.normal()
            rows.append(row)
    return pd.DataFrame(rows)
