"""Many small models of one shape trained together in one set of kernels.

Runs that differ only in ``seed``, ``lr``, ``weight_decay``, ``dropout`` and
``dropout_schedule`` share the data and the architecture; their parameters are
stacked with :func:`torch.func.stack_module_state` into one flat tensor
(:class:`~scalekit.train._stacked.FlatParameters`) and all of them are evaluated
on the same batch: an MLP or residual MLP by its own ``forward`` with batched
layers (:class:`~scalekit.train._stacked.StackedModel`), any other model (the GPT)
by one :func:`torch.func.vmap` of :func:`torch.func.functional_call`. AdamW is
applied to the flat tensor with a
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
from scalekit.train._config import TrainConfig
from scalekit.train._flops import counted_step_flops
from scalekit.train._loop import Log, TrainedRun, autocast, pick_device, run_attributes
from scalekit.train._models import GPT
from scalekit.train._stacked import FlatParameters, StackedModel, stackable
from scalekit.train.tasks import get_task
from scalekit.train.tasks.base import BatchStream
from scalekit.train._threads import with_train_threads

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
    """AdamW over the flat parameters of M models (:class:`FlatParameters`) with one
    learning rate and weight decay per model.

    Mirrors :class:`torch.optim.AdamW` (decoupled decay, bias-corrected moments).
    """

    def __init__(self, flat: FlatParameters) -> None:
        self.param = flat.data
        self.exp_avg = torch.zeros_like(self.param)
        self.exp_avg_sq = torch.zeros_like(self.param)
        self.steps = 0
        self._lrs, self._decays = _OnDevice(self.param.device), _OnDevice(self.param.device)

    @torch.no_grad()
    def step(self, lrs: Sequence[float], weight_decays: Sequence[float]) -> None:
        self.steps += 1
        beta1, beta2 = BETAS
        correction1 = 1 - beta1 ** self.steps
        correction2_sqrt = math.sqrt(1 - beta2 ** self.steps)
        p, grad = self.param, self.param.grad
        lr = _per_model(self._lrs(lrs), p)
        if any(weight_decays):  # (a factor of exactly 1 otherwise)
            p.mul_(1 - lr * _per_model(self._decays(weight_decays), p))
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (self.exp_avg_sq.sqrt() / correction2_sqrt).add_(EPS)
        p.sub_(lr / correction1 * self.exp_avg / denom)
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
    attrs = [run_attributes(c, data, m, flops_per_step, device) for c, m in zip(configs, models, strict=True)]
    params, buffers = stack_module_state(models)
    flat = FlatParameters(params)
    base = copy.deepcopy(models[0]).to("meta")  # model i for a task's metrics (_member)
    if isinstance(base, GPT):
        base.batched_attention()
    if stackable(models[0]):  # one set of batched kernels, no vmap over the forward
        stacked = StackedModel(models[0])
        net, dropout_p = stacked.module, torch.zeros(len(configs), device=device)
        net.dropout_p = dropout_p.view(-1, 1, 1)
        outputs = stacked
    else:
        net, dropout_p = base, buffers["dropout_p"]
        forward = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)),
                       in_dims=(0, 0, None), randomness="different")

        def outputs(views, x):
            return forward(views, buffers, x)

    net.dropout_rate = 1.0 if any(c.dropout > 0 for c in configs) else 0.0
    losses = data.losses_of
    errors = None if data.error is None else vmap(data.error, in_dims=(0, None))
    optimizer = StackedAdamW(flat)
    batches = BatchStream([first.data_seed, 1], device)
    torch.manual_seed(first.seed)
    evals = set(first.eval_steps())
    points: list[list[dict[str, float]]] = [[] for _ in configs]
    train_sum = torch.zeros(len(configs), device=device)
    since_eval, started = 0, time.perf_counter()
    dropouts, last_dropouts = _OnDevice(device), None
    net.train()

    for step in range(first.steps):
        rates = dropouts(c.dropout_at(step) for c in configs)
        if rates is not last_dropouts:  # a new tensor only when a rate changes
            dropout_p.copy_(rates)
            last_dropouts = rates
        x, y = data.sample(batches, first.batch_size)  # drawn on the device
        with autocast(device, first.precision):
            loss = losses(outputs(flat.views(), x), y)
        loss.sum().backward()  # models share no parameters: each gets its own gradient
        optimizer.step([c.lr_at(step) for c in configs], [c.weight_decay for c in configs])
        train_sum += loss.detach()
        since_eval += 1
        if step + 1 in evals:
            net.eval()
            base.eval()
            with torch.no_grad(), autocast(device, first.precision):
                views, (val_x, val_y) = flat.views(), data.val
                val_out = outputs(views, val_x)
                val = losses(val_out, val_y)
                val_error = None if errors is None else errors(val_out, val_y)
                own = [{} if data.metrics is None else data.metrics(_member(base, views, buffers, i))
                       for i in range(len(configs))]
            net.train()
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
    return [TrainedRun(c.name, a, p) for c, a, p in zip(configs, attrs, points, strict=True)]
