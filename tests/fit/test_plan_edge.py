"""A compute-optimal size at the edge of the sizes searched is said, not passed off as a size."""

import numpy as np

from scalekit.fit import fit_law, plan_for_compute


def _grid():
    N = np.repeat(np.geomspace(1e7, 1e9, 6), 5)
    D = np.tile(np.geomspace(1e9, 1e11, 5), 6)
    return {"params": N, "tokens": D}


def test_a_law_without_a_size_term_has_its_optimum_interval_at_the_edge():
    # truth L = 1.7 + 410 / D^0.28: the loss does not depend on N, so at fixed compute it
    # falls all the way to N = 1 (D = C/6): no interior optimum exists
    X = _grid()
    y = (1.7 + 410 / X["tokens"] ** 0.28) * np.exp(np.random.default_rng(0).normal(0, 0.003, 30))
    plan = plan_for_compute(fit_law("chinchilla", X, y, bootstrap=50, seed=0, n_jobs=1), 1e21)
    edge = [d for d in plan.diagnostics if d.code == "optimum_at_edge"]
    assert len(edge) == 1 and edge[0].severity == "warning"
    assert plan["params_ci"][0] < 1.0 + 1e-6                 # the end it speaks of is N = 1


def test_a_law_with_an_interior_optimum_says_nothing_of_edges():
    X = _grid()   # Hoffmann et al.'s law: N* at 1e21 FLOPs is 1.8e9 (closed form), inside (1, C/6)
    y = (1.69 + 406.4 / X["params"] ** 0.34 + 410.7 / X["tokens"] ** 0.28) * np.exp(
        np.random.default_rng(0).normal(0, 0.003, 30))
    plan = plan_for_compute(fit_law("chinchilla", X, y, bootstrap=50, seed=0, n_jobs=1), 1e21)
    assert not [d for d in plan.diagnostics if d.code == "optimum_at_edge"]
    assert 1e8 < plan["params"] < 1e11
