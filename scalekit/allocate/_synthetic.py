"""Synthetic sweeps with the early-leader trap: small models lead early, large ones win late.

Every run trains to the same compute ``C_max``; its loss after ``D`` tokens is
the Chinchilla law ``L = E + A/N^alpha + B/D^beta`` (Hoffmann et al. 2022,
approach 3 values) with ``D = C / (6 N)``, its reducible part scaled by a
per-run hyper-parameter penalty, times log-normal noise. At a small compute the
smallest models have the lowest loss; at ``C_max`` the compute-optimal size wins.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.allocate._sweep import Sweep, sweep_from_frame
from scalekit.checks import check_number
from scalekit.compute import tokens_for_compute

CHINCHILLA = dict(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


def chinchilla_loss(params, tokens, *, E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28):
    """``E + A / N**alpha + B / D**beta`` (Hoffmann et al. 2022)."""
    return E + A / np.asarray(params, float) ** alpha + B / np.asarray(tokens, float) ** beta


def early_leader_frame(*, seed: int = 0, sizes: int = 9, variants: int = 3,
                       min_params: float = 1e7, max_params: float = 1.5e9,
                       max_compute: float = 1e20, points: int = 120, noise: float = 0.003,
                       penalty: float = 0.06) -> pd.DataFrame:
    """Tidy frame of ``sizes * variants`` complete curves (``run``, ``step``, ``compute``,
    ``loss``, ``params``).

    ``penalty`` is the scale of the per-run hyper-parameter penalty on the
    reducible loss (half-normal), ``noise`` the log-normal noise of each point.
    """
    check_number("sizes", sizes, low=2, integer=True)
    check_number("variants", variants, low=1, integer=True)
    check_number("points", points, low=2, integer=True)
    rng = np.random.default_rng(seed)
    rows = []
    steps = np.arange(1, points + 1)
    for i, n in enumerate(np.geomspace(min_params, max_params, sizes)):
        for v in range(variants):
            factor = 1.0 + abs(rng.normal(0.0, penalty))
            compute = max_compute * steps / points
            tokens = tokens_for_compute(compute, n)
            reducible = chinchilla_loss(n, tokens) - CHINCHILLA["E"]
            loss = (CHINCHILLA["E"] + factor * reducible) * np.exp(rng.normal(0, noise, points))
            rows.append(pd.DataFrame({"run": f"n{i}_v{v}", "step": steps, "compute": compute,
                                      "tokens": tokens, "loss": loss, "params": n}))
    return pd.concat(rows, ignore_index=True)


def early_leader_sweep(*, seed: int = 0, resource: str = "compute", **settings) -> Sweep:
    """:func:`early_leader_frame` as a :class:`Sweep` on the ``resource`` axis."""
    return sweep_from_frame(early_leader_frame(seed=seed, **settings), resource=resource)


def ladder_frame(*, seed: int = 0, sizes: tuple[float, ...] = (1.9e8, 3.7e8, 7.6e8, 1.3e9),
                 multiples: tuple[float, ...] = (1, 2, 5, 10), points: int = 60,
                 noise: float = 0.003, plateau: float = 0.0) -> pd.DataFrame:
    """Tidy frame of a model ladder: every size trained for each multiple of 20 tokens per
    parameter (the compute-optimal ratio of Hoffmann et al. 2022) at a constant learning
    rate, so a run is the prefix of the longer runs of its size; its loss the Chinchilla
    law plus, with ``plateau`` > 0, a hump of that relative height over its first 10 tokens
    per parameter that then drops (a plateau-then-drop curve), times log-normal noise
    (the same draws for the shared prefix)."""
    check_number("points", points, low=2, integer=True)
    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        longest = 20.0 * max(multiples) * n
        tokens = longest * np.arange(1, points + 1) / points
        hump = 1 + plateau / (1 + np.exp((tokens / n - 10.0) / 2.0))
        loss = chinchilla_loss(n, tokens) * hump * np.exp(rng.normal(0, noise, points))
        for m in multiples:
            keep = tokens <= 20.0 * m * n * (1 + 1e-9)
            rows.append(pd.DataFrame({"run": f"n{n:.2g}-x{m:g}", "step": np.arange(keep.sum()) + 1,
                                      "compute": 6.0 * n * tokens[keep], "tokens": tokens[keep],
                                      "loss": loss[keep], "params": n}))
    return pd.concat(rows, ignore_index=True)


def ladder_sweep(*, seed: int = 0, resource: str = "compute", **settings) -> Sweep:
    """:func:`ladder_frame` as a :class:`Sweep` on the ``resource`` axis."""
    return sweep_from_frame(ladder_frame(seed=seed, **settings), resource=resource)
