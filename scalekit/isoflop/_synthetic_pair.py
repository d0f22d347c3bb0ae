"""Two synthetic IsoFLOP sweeps with a known compute multiplier (for tests and the bench).

The baseline's loss is Chinchilla's law ``L(N, D) = E + A/N^alpha + B/D^beta`` (Hoffmann
et al. 2022, eq. 10: E 1.69, A 406.4, B 410.7, alpha 0.34, beta 0.28 by default), whose
frontier under C = 6ND is exactly ``E + P·(C/6)^-gamma`` with ``gamma = alpha·beta /
(alpha + beta)``. The variant sees ``scale`` times the parameters and tokens it is given
(``L_v(N, D) = L(scale·N, scale·D)``), so its frontier is the baseline's at ``scale²·C``: a
constant multiplier k = scale². A variant ``beta`` other than the baseline's changes the
frontier's exponent, and k changes with scale (:meth:`SyntheticPair.multiplier`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

_CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}


@dataclass(frozen=True)
class SyntheticPair:
    """A baseline and a variant sweep (``baseline``, ``variant``: columns run, compute,
    params, tokens, loss) and the laws that drew them."""

    baseline: pd.DataFrame
    variant: pd.DataFrame
    law_baseline: dict
    law_variant: dict
    scale: float

    def frontier(self, compute, arm: str = "baseline") -> np.ndarray:
        """The true least loss at ``compute`` of ``arm``."""
        law = self.law_baseline if arm == "baseline" else self.law_variant
        s = 1.0 if arm == "baseline" else self.scale
        p, gamma = _frontier_constants(law)
        return law["E"] + p * (s * s * np.asarray(compute, dtype=float) / 6) ** -gamma

    def multiplier(self, compute) -> np.ndarray:
        """The true k at ``compute``: the baseline's compute for the variant's least loss, over C."""
        compute = np.asarray(compute, dtype=float)
        p, gamma = _frontier_constants(self.law_baseline)
        gap = self.frontier(compute, "variant") - self.law_baseline["E"]
        return 6 * (gap / p) ** (-1 / gamma) / compute


def _optimum_constant(law: dict) -> float:
    """G of the optimal allocation N_opt = G·(C/6)^(beta/(alpha+beta)) (Hoffmann et al. 2022,
    eq. 4)."""
    a, b = law["alpha"], law["beta"]
    return (a * law["A"] / (b * law["B"])) ** (1 / (a + b))


def _frontier_constants(law: dict) -> tuple[float, float]:
    a, b = law["alpha"], law["beta"]
    g = _optimum_constant(law)
    return law["A"] * g ** -a + law["B"] * g ** b, a * b / (a + b)


def isoflop_pair(*, scale: float = 1.2, seed: int = 0, noise: float = 0.01,
                 budgets: Sequence[float] = (1e18, 3e18, 1e19, 3e19, 1e20, 3e20),
                 sizes: int = 9, span: float = 0.6, floor: float | None = None,
                 variant_beta: float | None = None) -> SyntheticPair:
    """Draw a pair: ``sizes`` models per budget, log-spaced ±``span`` decades around the
    baseline's optimal N, the same models in both arms, Gaussian loss noise ``noise``
    drawn independently per run; ``floor`` replaces E (0: a pure power-law frontier),
    ``variant_beta`` the variant's beta."""
    rng = np.random.default_rng(seed)
    base = dict(_CHINCHILLA, **({} if floor is None else {"E": floor}))
    var = dict(base, **({} if variant_beta is None else {"beta": variant_beta}))
    a, b = base["alpha"], base["beta"]
    g = _optimum_constant(base)
    frames = []
    for law, s in ((base, 1.0), (var, scale)):
        rows = []
        for c in budgets:
            n_opt = g * (c / 6) ** (b / (a + b))
            for n in n_opt * 10.0 ** np.linspace(-span, span, sizes):
                d = c / (6 * n)
                loss = law["E"] + law["A"] * (s * n) ** -law["alpha"] + \
                    law["B"] * (s * d) ** -law["beta"]
                rows.append({"run": f"C{c:.2e}_N{n:.4e}", "compute": c, "params": n,
                             "tokens": d, "loss": loss + noise * rng.normal()})
        frames.append(pd.DataFrame(rows))
    return SyntheticPair(frames[0], frames[1], base, var, float(scale))
