"""Many small models of one shape trained together in one set of kernels.

Runs that differ only in ``seed``, ``lr``, ``weight_decay``, ``dropout`` and
``dropout_schedule`` share the data and the architecture; their parameters are
stacked with :func:`torch.func.stack_module_state` and one
:func:`torch.func.vmap` of :func:`torch.func.functional_call` evaluates all of
them on the same batch. AdamW is applied to the stacked tensors with a
learning rate per model, in the same arithmetic as :class:`torch.optim.AdamW`,
so each run follows the curve it would have trained alone (up to
floating-point reordering, and dropout masks, which are drawn differently).
A task's own metrics (:attr:`~scalekit.train.tasks.base.TaskData.metrics`) are
evaluated model by model on each one's slice of the stack.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence

import torch
from torch.func import functional_call, stack_module_state, vmap

from scalekit.compute import training_flops
from scalekit.errors import InputError
from scalekit.train.config import TrainConfig
from scalekit.train.flops import counted_step_flops
from scalekit.train.loop import Log, TrainedRun, autocast, pick_device, run_attributes
from scalekit.train.models import GPT
from scalekit.train.tasks import get_task
from scalekit.train.tasks.base import BatchStream
from scalekit.train.threads import with_train_threads

PER_MODEL = ("seed", "lr", "weight_decay", "dropout", "dropout_schedule")
BETAS, EPS = (0.9, 0.999), 1e-8


def shape_key(config: TrainConfig) -> TrainConfig:
    """``config`` with the per-model settings reset: equal keys can be trained together."""
    return config.replace(seed=0, lr=1.0, weight_decay=0.0, dropout=0.0, dropout_schedule="constant")


def _per_model(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``values`` (one per model) as a (M, 1, …) view broadcasting against ``like``."""
    return values.to(like.dtype).view(-1, *[1] * (like.dim() - 1))


class _OnDevice:
    """One tensor per distinct list of per-model values: a value copied to the device only
    when it changes (a constant learning rate or dropout is copied once)."""

    def __init__(self, device: torch.device) -> None:
        self.device, self._last, self._tensor = device, None, None

    def __call__(self, values: Sequence[float]) -> torch.Tensor:
        values = tuple(values)
        if values != self._last:
            self._last = values
            self._tensor = torch.tensor(values, dtype=torch.float32).to(self.device,
                                                                       non_blocking=True)
        return self._tensor


class StackedAdamW:
    """AdamW over stacked parameters with one learning rate and weight decay per model.

    Mirrors :class:`torch.optim.AdamW` (decoupled decay, bias-corrected moments).
    """

    def __init__(self, params: dict[str, torch.Tensor]) -> None:
        self.params = params
        self.exp_avg = {k: torch.zeros_like(p) for k, p in params.items()}
        self.exp_avg_sq = {k: torch.zeros_like(p) for k, p in params.items()}
        self.steps = 0
        device = next(iter(params.values())).device
        self._lrs, self._decays = _OnDevice(device), _OnDevice(device)

    @torch.no_grad()
    def step(self, lrs: Sequence[float], weight_decays: Sequence[float]) -> None:
        self.steps += 1
        beta1, beta2 = BETAS
        correction1 = 1 - beta1 ** self.steps
        correction2_sqrt = math.sqrt(1 - beta2 ** self.steps)
        lrs, weight_decays = self._lrs(lrs), self._decays(weight_decays)
        for key, p in self.params.items():
            grad = p.grad
            lr = _per_model(lrs, p)
            p.mul_(1 - lr * _per_model(weight_decays, p))
            self.exp_avg[key].lerp_(grad, 1 - beta1)
            self.exp_avg_sq[key].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (self.exp_avg_sq[key].sqrt() / correction2_sqrt).add_(EPS)
            p.sub_(lr / correction1 * self.exp_avg[key] / denom)
            p.grad = None


def _member(base: torch.nn.Module, params: dict[str, torch.Tensor],
            buffers: dict[str, torch.Tensor], i: int):
    """Model ``i`` of the stack as a function ``model(x, **kwargs)`` (for a task's own
    metrics, :attr:`~scalekit.train.tasks.base.TaskData.metrics`)."""
    state = ({k: p[i] for k, p in params.items()}, {k: b[i] for k, b in buffers.items()})
    return lambda x, **kwargs: functional_call(base, state, (x,), kwargs)


@with_train_threads
def train_batched(configs: Sequence[TrainConfig], *, log: Log | None = None) -> list[TrainedRun]:
    """Train runs of one shape together; returns one :class:`TrainedRun` per config, in order.

    Parameters
    ----------
    configs : sequence of TrainConfig
        Runs equal in everything but ``seed``, ``lr``, ``weight_decay``, ``dropout``
        and ``dropout_schedule``.
    log : callable, optional
        ``log(name, attrs, points)`` after each evaluation, once per run.
    """
    configs = list(configs)
    if not configs:
        return []
    first = configs[0]
    if any(shape_key(c) != shape_key(first) for c in configs):
        raise InputError("batched runs may differ only in " + ", ".join(PER_MODEL))
    if first.compile:
        raise InputError("batched training does not use torch.compile; drop `compile`")
    device = pick_device(first.device)
    task = get_task(first.task)
    data = task.make_data(first)
    models = []
    for config in configs:
        torch.manual_seed(config.seed)
        models.append(task.make_model(config, data).to(device))
    data = data.to(device)
    probe_x, probe_y = data.sample(BatchStream(0, device), first.batch_size)
    flops_per_step = counted_step_flops(models[0], data.loss_of, probe_x, probe_y)
    attrs = [run_attributes(c, data, m, flops_per_step, device) for c, m in zip(configs, models)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    base.dropout_rate = 1.0 if any(c.dropout > 0 for c in configs) else 0.0
    if isinstance(base, GPT):
        base.batched_attention()

    def one_loss(p, b, x, y):
        return data.loss_of(functional_call(base, (p, b), (x,)), y)

    losses = vmap(one_loss, in_dims=(0, 0, None, None), randomness="different")
    if data.error is not None:
        errors = vmap(lambda p, b, x, y: data.error(functional_call(base, (p, b), (x,)), y),
                      in_dims=(0, 0, None, None), randomness="different")
    optimizer = StackedAdamW(params)
    batches = BatchStream([first.data_seed, 1], device)
    torch.manual_seed(first.seed)
    evals = set(first.eval_steps())
    points: list[list[dict[str, float]]] = [[] for _ in configs]
    train_sum = torch.zeros(len(configs), device=device)
    since_eval, started = 0, time.perf_counter()
    dropouts = _OnDevice(device)

    for step in range(first.steps):
        buffers["dropout_p"].copy_(dropouts(c.dropout_at(step) for c in configs))
        base.train()
        x, y = data.sample(batches, first.batch_size)  # drawn on the device
        with autocast(device, first.precision):
            loss = losses(params, buffers, x, y)
        loss.sum().backward()  # models share no parameters: each gets its own gradient
        optimizer.step([c.lr_at(step) for c in configs], [c.weight_decay for c in configs])
        train_sum += loss.detach()
        since_eval += 1
        if step + 1 in evals:
            base.eval()
            with torch.no_grad(), autocast(device, first.precision):
                val_x, val_y = data.val
                val = losses(params, buffers, val_x, val_y)
                val_error = None if data.error is None else errors(params, buffers, val_x, val_y)
                own = [{} if data.metrics is None else data.metrics(_member(base, params, buffers, i))
                       for i in range(len(configs))]
            samples = (step + 1) * first.batch_size
            tokens = samples * data.tokens_per_sample
            wall = time.perf_counter() - started
            for i, config in enumerate(configs):
                point = {"step": step + 1, "samples": samples, "tokens": tokens,
                         "compute": float((step + 1) * flops_per_step),
                         "compute_6nd": training_flops(attrs[i]["params"], tokens),
                         "loss": float(val[i]), "val_loss": float(val[i]),
                         "train_loss": float(train_sum[i]) / since_eval, "wall_time": wall}
                if val_error is not None:
                    point["error"] = float(val_error[i])
                point.update(own[i])
                points[i].append(point)
                if log is not None:
                    log(config.name, attrs[i], [point])
            train_sum.zero_()
            since_eval = 0
    return [TrainedRun(c.name, a, p) for c, a, p in zip(configs, attrs, points)]
