"""Error-against-k data with a known shape, to measure the shape test's false claims and power.

Nine k from 1 to 256 (powers of two), three draws at each, relative Gaussian noise of
0.5–3%. A monotone draw is ``E + 0.4 / k^2`` (issue 38's form, ``E`` log-uniform in
0.01–0.3); a U-shaped draw is ``E + A k^-a + B (1 - k^-b)`` with its least error inside
the data and a rise from there to k = 256 of ``min_rise`` to ``max_rise`` noise widths
(the noise of one point at the minimum).
"""

from __future__ import annotations

import numpy as np

#: The k of every draw: 1, 2, 4, ..., 256, three points each.
K = np.repeat(2.0 ** np.arange(9), 3)
_DENSE = np.geomspace(1.0, 256.0, 2000)


def _noise(rng) -> float:
    return float(rng.uniform(0.005, 0.03))


def monotone_draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(k, error)`` of ``E + 0.4 / k^2`` with relative noise."""
    E, sigma = float(np.exp(rng.uniform(np.log(0.01), np.log(0.3)))), _noise(rng)
    return K, (E + 0.4 / K ** 2) * (1.0 + sigma * rng.standard_normal(K.size))


def u_shape_draw(rng: np.random.Generator, *, min_rise: float = 3.0, max_rise: float = np.inf
                 ) -> tuple[np.ndarray, np.ndarray, float]:
    """``(k, error, k_opt)`` of a U-shaped law whose rise inside the data is ``min_rise`` to
    ``max_rise`` noise widths."""
    while True:
        E, A = (float(np.exp(rng.uniform(np.log(lo), np.log(hi)))) for lo, hi in
                ((0.01, 0.3), (0.05, 1.0)))
        a = float(rng.uniform(0.5, 2.5))
        b = float(rng.uniform(0.1, 0.9 * a))
        B = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.3))))
        sigma = _noise(rng)
        curve = E + A * _DENSE ** -a + B * (1.0 - _DENSE ** -b)
        j = int(np.argmin(curve))
        rise = (curve[-1] - curve[j]) / (sigma * curve[j])
        if 0 < j < _DENSE.size - 1 and min_rise <= rise <= max_rise:
            mean = E + A * K ** -a + B * (1.0 - K ** -b)
            return K, mean * (1.0 + sigma * rng.standard_normal(K.size)), float(_DENSE[j])
