"""Counted FLOPs agree with the closed form and accumulate monotonically."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from scalekit.train._config import TrainConfig
from scalekit.train._flops import analytic_step_flops, counted_step_flops
from scalekit.train._loop import train
from scalekit.train._models import GPT, MLP, ResidualMLP


def _cross_entropy(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


@pytest.mark.parametrize("model, batch, context", [
    (MLP(32, 1, width=128, depth=3), 64, 1),
    (ResidualMLP(32, 1, width=64, depth=4), 64, 1),
    (GPT(96, 64, width=64, depth=2), 8, 64),
    (GPT(18, 32, width=32, depth=3), 4, 32),
])
def test_counted_step_flops_within_5_percent_of_the_closed_form(model, batch, context):
    if isinstance(model, GPT):
        x = torch.randint(0, model.tok.weight.shape[0], (batch, context))
        counted = counted_step_flops(model, _cross_entropy, x, x)
    else:
        counted = counted_step_flops(model, F.mse_loss, torch.randn(batch, 32), torch.randn(batch, 1))
    assert counted == pytest.approx(analytic_step_flops(model, batch, context), rel=0.05)


@pytest.mark.parametrize("model", [ResidualMLP(32, 1, width=64, depth=4), GPT(96, 64, width=64, depth=2)])
def test_counted_step_flops_equal_torchs_flop_counter(model):
    """The count is torch's own FlopCounterMode's (with the CPU attention kernel counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    from scalekit.train._flops import _CPU_ATTENTION

    if isinstance(model, GPT):
        x = y = torch.randint(0, 96, (4, 64))
        loss = _cross_entropy
    else:
        x, y, loss = torch.randn(16, 32), torch.randn(16, 1), F.mse_loss
    counted = counted_step_flops(model, loss, x, y)
    with FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION) as reference:
        loss(model(x), y).backward()
    assert counted == reference.get_total_flops() > 0


def test_counted_compute_of_a_run_is_monotone_and_proportional_to_steps():
    result = train(TrainConfig(width=32, steps=40, evals=5, device="cpu"))
    steps = np.array([p["step"] for p in result.points])
    compute = np.array([p["compute"] for p in result.points])
    assert np.all(np.diff(compute) > 0)
    model = MLP(32, 1, width=32, depth=2)
    assert compute / steps == pytest.approx(analytic_step_flops(model, 64), rel=0.05)
    six_nd = np.array([p["compute_6nd"] for p in result.points])
    assert six_nd == pytest.approx(6 * result.attrs["params"] * steps * 64)
