"""The numeric compute-optimal search against Chinchilla's closed form."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.fit._plans import optimal_params
from scalekit.laws import get_law


@pytest.mark.parametrize("alpha,beta", [(0.34, 0.28), (0.5, 0.5), (0.3, 0.45)])
@pytest.mark.parametrize("compute", [1e18, 5.76e23])
def test_numeric_optimum_matches_closed_form(alpha, beta, compute):
    E, A, B = 1.69, 406.4, 410.7
    law = get_law("chinchilla")
    theta = np.array([{"E": E, "A": A, "B": B, "alpha": alpha, "beta": beta}[n]
                      for n in law.param_names])
    # Hoffmann et al. (2022), Appendix D: N*(C) = G (C/6)^(beta/(alpha+beta)).
    G = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    expected = G * (compute / 6) ** (beta / (alpha + beta))
    assert optimal_params(law, theta, compute) == pytest.approx(expected, rel=1e-6)
