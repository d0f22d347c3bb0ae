"""A Chinchilla surface as a known truth, point grids drawn from it, and a small start grid."""

from __future__ import annotations

import itertools

import numpy as np

TRUTH = {"E": 1.7, "A": 400.0, "B": 2000.0, "alpha": 0.34, "beta": 0.37}
# Hoffmann et al. (2022), Appendix D, from TRUTH: N* = G (C/6)^a, D* = (C/6)^b / G.
A_TRUE = TRUTH["beta"] / (TRUTH["alpha"] + TRUTH["beta"])
G_TRUE = (TRUTH["alpha"] * TRUTH["A"] / (TRUTH["beta"] * TRUTH["B"])) ** (
    1 / (TRUTH["alpha"] + TRUTH["beta"]))
# 32 starts in the fitting space (log E, log A, log B, alpha, beta), none at the truth.
STARTS = np.array(list(itertools.product([0.0, 1.0], [4.0, 7.0], [6.0, 9.0], [0.2, 0.6],
                                         [0.2, 0.6])))


def surface(n, d):
    """The true loss of N parameters trained on D tokens."""
    return TRUTH["E"] + TRUTH["A"] / n ** TRUTH["alpha"] + TRUTH["B"] / d ** TRUTH["beta"]


def points(sizes, tokens, *, seed=0, noise=0.005):
    """Every (size, tokens) pair with log-normal noise: ``({"params", "tokens"}, loss)``."""
    n, d = (a.ravel() for a in np.meshgrid(sizes, tokens))
    y = surface(n, d) * np.exp(np.random.default_rng(seed).normal(0.0, noise, n.size))
    return {"params": n, "tokens": d}, y
