"""FLOP conventions: training compute C = k·N·D (k = 6 by default) and petaflop/s-days.

The 6·N·D rule (Kaplan et al. 2020, Table 1; Hoffmann et al. 2022) counts 2
FLOPs per parameter and token forward and 4 backward. Every place that derives
compute, tokens or parameters from the other two goes through this module, so
the convention is stated once. Torch-free; works on floats and arrays alike.
"""

from __future__ import annotations

#: k in C = k·N·D: training FLOPs per parameter per token.
FLOPS_PER_PARAM_TOKEN = 6.0

#: FLOPs in one petaflop/s-day: 1e15 FLOP/s for 86 400 s.
PF_DAY = 1e15 * 86400


def training_flops(params, tokens, *, flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN):
    """Training compute ``k·N·D`` of ``params`` (N) trained on ``tokens`` (D)."""
    return flops_per_param_token * params * tokens


def tokens_for_compute(compute, params, *,
                       flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN):
    """Tokens ``D = C / (k·N)`` that ``compute`` buys a model of ``params``."""
    return compute / (flops_per_param_token * params)


def params_for_compute(compute, tokens, *,
                       flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN):
    """Parameters ``N = C / (k·D)`` a model trained on ``tokens`` can have for ``compute``."""
    return compute / (flops_per_param_token * tokens)


def flops_rule(flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN) -> str:
    """The convention as reports state it: ``"C = 6·N·D"``."""
    return f"C = {flops_per_param_token:g}·N·D"
