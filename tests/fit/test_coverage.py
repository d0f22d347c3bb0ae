"""Coverage of the 95% intervals on synthetic data with a known truth (issue 13 §3).

Chinchilla surface (E 1.7, A 400, B 2000, alpha 0.34, beta 0.37) on 6 sizes x 8
token counts, 1% log-normal noise, 50 data sets: the intervals of the five
parameters, of a, b, G (Hoffmann et al. 2022, Appendix D), of N* at 1e21 FLOPs
and the prediction interval of a held-out run 3x larger than any fitted one
must each cover the truth about 95% of the time. (Each count is binomial: with
50 sets, 0.95 nominal gives 44 or more covered 96% of the time.)
"""

from __future__ import annotations

import numpy as np
import pytest

from fit.fit_synthetic import A_TRUE, G_TRUE, STARTS, TRUTH, points, surface
from scalekit.fit import fit_law
from scalekit.fit._plans import plan_for_compute

DERIVED = {"a": A_TRUE, "b": 1 - A_TRUE, "G": G_TRUE}
COMPUTE = 1e21
N_STAR = G_TRUE * (COMPUTE / 6) ** A_TRUE


def coverage(n_sets: int, **fit_options) -> dict[str, float]:
    X, _ = points(np.geomspace(1e7, 1e9, 6), np.geomspace(1e9, 1e11, 8))
    n, d = X["params"], X["tokens"]
    held_n, held_d = np.array([3e9]), np.array([3e11])
    hits: dict[str, list[bool]] = {}
    for seed in range(n_sets):
        rng = np.random.default_rng(seed)
        y = surface(n, d) * np.exp(rng.normal(0.0, 0.01, n.size))
        fit = fit_law("chinchilla", {"N": n, "D": d}, y, starts=STARTS, seed=seed, n_jobs=1,
                      **fit_options)
        for name, true in TRUTH.items():
            hits.setdefault(name, []).append(fit.ci[name][0] <= true <= fit.ci[name][1])
        for name, true in DERIVED.items():
            lo, hi = fit.derived_ci[name]
            hits.setdefault(name, []).append(lo <= true <= hi)
        lo, hi = plan_for_compute(fit, COMPUTE)["params_ci"]
        hits.setdefault("N*", []).append(lo <= N_STAR <= hi)
        new = surface(held_n, held_d)[0] * np.exp(rng.normal(0.0, 0.01))
        lo, hi = fit.interval({"N": held_n, "D": held_d}, kind="prediction")
        hits.setdefault("held-out run", []).append(lo[0] <= new <= hi[0])
    return {name: float(np.mean(h)) for name, h in hits.items()}


@pytest.mark.slow
def test_student_t_intervals_cover_the_truth_at_their_level():
    found = coverage(50)
    assert min(found.values()) >= 0.86, found
    assert 0.90 <= np.mean(list(found.values())) <= 0.99, found


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_truth_at_their_level():
    found = coverage(50, bootstrap=100)
    assert min(found.values()) >= 0.84, found
    assert 0.90 <= np.mean(list(found.values())) <= 0.99, found
