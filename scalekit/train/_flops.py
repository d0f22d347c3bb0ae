"""FLOP accounting: counted by torch, estimated as 6·N·D, and a closed form.

``counted_step_flops`` runs one forward and backward pass under a dispatch mode
that counts, with the formulas of :mod:`torch.utils.flop_counter` (those of its
``FlopCounterMode``), the matrix products (and attention) that autograd actually
executes.
The usual ``6·N·D`` estimate (Kaplan et al. 2020, N the non-embedding
parameters) is :func:`scalekit.compute.training_flops`. ``analytic_step_flops``
is an independent closed form for the bundled models, used to check the counter.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import (
    flop_registry,
    sdpa_backward_flop_count,
    sdpa_flop_count,
    shape_wrapper,
)


def _cpu_attention(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query, key, value)


def _cpu_attention_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


# torch counts the CUDA attention kernels but not the CPU one; count it the same way.
_CPU_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward,
}
_FORMULAS = {**flop_registry, **{op: shape_wrapper(f) for op, f in _CPU_ATTENTION.items()}}


class _Counter(TorchDispatchMode):
    """Adds up the FLOPs of every operator that has a formula in ``_FORMULAS``; an operator
    without one is split into the operators it is made of where it can be (as
    ``FlopCounterMode`` does).

    torch wraps a dispatch mode's ``__torch_dispatch__`` so that ``torch.compile`` does not
    trace into it, which imports ``torch._dynamo`` at the first operator (about 1 CPU-s,
    more than the rest of a small run's start-up); the count runs eagerly, so this mode
    asks not to be wrapped (if a later torch ignores the request, the count is unchanged).
    """

    total = 0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func._overloadpacket
        if packet not in _FORMULAS and func is not torch.ops.prim.device.default:
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        out = func(*args, **kwargs)
        if packet in _FORMULAS:
            self.total += _FORMULAS[packet](*args, **kwargs, out_val=out)
        return out


def counted_step_flops(model: nn.Module, loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                       x: torch.Tensor, y: torch.Tensor) -> int:
    """FLOPs of one training step (forward, loss, backward) on the batch ``(x, y)``.

    Dropout is switched off for the pass (it adds no FLOPs) and the gradients it
    leaves are cleared, so the model is unchanged.
    """
    was_training = model.training
    model.eval()
    with _Counter() as counter:
        loss_fn(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    return int(counter.total)


def analytic_step_flops(model: nn.Module, batch: int, context: int = 1) -> int:
    """Closed-form training FLOPs of one step of a bundled model.

    Every matrix product of an (m×k)·(k×n) costs ``2mkn`` forward, and backward
    needs the same again for the weight gradient and, except for the first layer
    (whose input needs no gradient), for the input gradient. Attention adds
    ``QK^T`` and ``AV``: ``2·2·T²·width`` per sequence and layer forward (the
    full square, as the kernel computes it), twice that backward. (The counter
    charges the fused attention backward 2.5 forwards, as it recomputes the scores,
    so GPT counts run a few percent above this form.)
    """
    from scalekit.train._models import GPT, MLP, ResidualMLP

    def linear_total(layers: list[nn.Linear], rows: int, first_needs_grad: bool) -> int:
        forward = sum(2 * rows * layer.in_features * layer.out_features for layer in layers)
        first = 2 * rows * layers[0].in_features * layers[0].out_features
        return 3 * forward - (0 if first_needs_grad else first)

    if isinstance(model, MLP):
        return linear_total([*model.hidden, model.out], batch, False)
    if isinstance(model, ResidualMLP):
        layers = [model.embed, *(m for block in model.blocks for m in block if isinstance(m, nn.Linear)),
                  model.out]
        return linear_total(layers, batch, False)
    if isinstance(model, GPT):
        tokens = batch * context
        width = model.tok.weight.shape[1]
        layers = [m for block in model.blocks for m in (block.qkv, block.proj, block.fc, block.fc_out)]
        readout = 2 * tokens * width * model.tok.weight.shape[0]
        attention = len(model.blocks) * batch * 4 * context * context * width
        return linear_total(layers, tokens, True) + 3 * (readout + attention)
    raise TypeError(f"no closed form for {type(model).__name__}")
