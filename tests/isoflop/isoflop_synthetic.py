"""Synthetic IsoFLOP sweeps and learning curves drawn from a known Chinchilla surface."""

from __future__ import annotations

import numpy as np
import pandas as pd

# Hoffmann et al. (2022), approach 3 estimates, used here as a known truth.
TRUTH = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
A_TRUE = TRUTH["beta"] / (TRUTH["alpha"] + TRUTH["beta"])
B_TRUE = TRUTH["alpha"] / (TRUTH["alpha"] + TRUTH["beta"])
G_TRUE = (TRUTH["alpha"] * TRUTH["A"] / (TRUTH["beta"] * TRUTH["B"])) ** (
    1 / (TRUTH["alpha"] + TRUTH["beta"]))
BUDGETS = np.logspace(18, 21, 7)


def surface(params, tokens):
    t = TRUTH
    params, tokens = np.asarray(params), np.asarray(tokens)
    return t["E"] + t["A"] * params ** -t["alpha"] + t["B"] * tokens ** -t["beta"]


def n_opt(compute):
    """Closed-form N*(C) under C = 6·N·D (Hoffmann et al. 2022, Appendix D)."""
    return G_TRUE * (np.asarray(compute) / 6) ** A_TRUE


def sweep(*, seed=0, noise=0.005, budgets=BUDGETS, n_sizes=9, half_width=0.8, shift=0.0,
          drift=0.0):
    """IsoFLOP points: per budget ``n_sizes`` log-spaced N around ``N*(C)·10^shift``.

    ``drift`` adds ``drift·log10(C/C_mid)`` decades to the centre (a grid that follows
    the wrong exponent).
    """
    rng = np.random.default_rng(seed)
    rows = []
    mid = np.sqrt(budgets[0] * budgets[-1])
    for c in budgets:
        centre = np.log10(n_opt(c)) + shift + drift * np.log10(c / mid)
        params = 10 ** np.linspace(centre - half_width, centre + half_width, n_sizes)
        tokens = c / (6 * params)
        loss = surface(params, tokens) * np.exp(noise * rng.standard_normal(n_sizes))
        rows.append(pd.DataFrame({"compute": c, "params": params, "tokens": tokens, "loss": loss}))
    return pd.concat(rows, ignore_index=True)


def learning_curves(*, seed=0, noise=0.003, n_runs=40, n_steps=60):
    """Runs of log-spaced sizes, each logged at log-spaced token counts (loss = surface)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, params in enumerate(np.logspace(7, 10.5, n_runs)):
        tokens = np.logspace(8, 12, n_steps)
        loss = surface(params, tokens) * np.exp(noise * rng.standard_normal(n_steps))
        rows.append(pd.DataFrame({"run": f"r{i}", "step": np.arange(1, n_steps + 1),
                                  "params": params, "tokens": tokens,
                                  "compute": 6 * params * tokens, "loss": loss}))
    return pd.concat(rows, ignore_index=True)
