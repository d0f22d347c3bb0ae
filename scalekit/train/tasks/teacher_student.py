"""Teacher–student learning with a power-law input spectrum.

Inputs are Gaussian with covariance eigenvalues ``k**-alpha`` (k = 1 … dim); the
teacher is a wide random one-hidden-layer tanh network whose pre-activations
have scale ``gain`` and whose j-th unit has output weight of scale ``j**-decay``,
so features matter less and less, as a power law. A power-law spectrum
makes the loss fall as a power law in student width and in data (Maloney,
Roberts & Sully 2022; Bahri et al. 2021). Regression targets are the teacher's
output (scaled to unit variance) plus Gaussian noise, which sets the irreducible
loss ``noise**2``; classification labels are the arg-max of ``classes`` teacher
outputs.

Options: ``dim`` (32), ``alpha`` (1.0), ``teacher_width`` (256), ``gain`` (1.0),
``decay`` (1.0), ``noise`` (0.3),
``kind`` ("regression" or "classification"), ``classes`` (10).
"""

from __future__ import annotations

import numpy as np
import torch

from scalekit.checks import check_choice, check_number
from scalekit.train._config import TrainConfig
from scalekit.train._models import MLP
from scalekit.train.tasks.base import TaskData, task_options, vector_task

DEFAULTS = {"dim": 32, "alpha": 1.0, "teacher_width": 256, "gain": 1.0, "decay": 1.0, "noise": 0.3,
            "kind": "regression", "classes": 10}


def _teacher(t: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The teacher's raw outputs at inputs ``x``."""
    return torch.tanh(x @ t["w1"] + t["bias"]) @ t["w2"]


def make_data(config: TrainConfig) -> TaskData:
    """Draw the teacher and the data for ``config.data_seed``."""
    opts = task_options(config, DEFAULTS)
    dim = check_number("dim", opts["dim"], low=1, integer=True)
    kind = check_choice("kind", opts["kind"], ("regression", "classification"))
    noise = check_number("noise", opts["noise"], low=0)
    n_out = check_number("classes", opts["classes"], low=2, integer=True) if kind == "classification" else 1
    rng = np.random.default_rng(config.data_seed)
    scale = np.arange(1, dim + 1) ** (-check_number("alpha", opts["alpha"], low=0) / 2)
    width = check_number("teacher_width", opts["teacher_width"], low=1, integer=True)
    gain = check_number("gain", opts["gain"], low=0, low_open=True)
    w1 = rng.standard_normal((dim, width)) * gain / np.sqrt(scale @ scale)
    bias = rng.standard_normal(width) * gain
    decay = np.arange(1, width + 1) ** -check_number("decay", opts["decay"], low=0)
    w2 = rng.standard_normal((width, n_out)) * decay[:, None]
    teacher = {name: torch.as_tensor(value, dtype=torch.float32) for name, value in
               {"scale": scale, "w1": w1, "bias": bias, "w2": w2}.items()}
    probe = _teacher(teacher, torch.as_tensor(rng.standard_normal((4096, dim)), dtype=torch.float32)
                     * teacher["scale"])
    teacher["center"], teacher["spread"] = probe.mean(dim=0), probe.std(dim=0, correction=0)

    def draw(t: dict[str, torch.Tensor], g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, dim, generator=g, device=g.device) * t["scale"]
        f = (_teacher(t, x) - t["center"]) / t["spread"]
        if kind == "classification":
            return x, f.argmax(dim=1)
        return x, f + noise * torch.randn(f.shape, generator=g, device=g.device)

    attrs = {"input_dim": dim, "alpha": opts["alpha"], "noise": noise, "kind": kind}
    if kind == "classification":
        attrs["classes"] = n_out
    return vector_task(draw, teacher, rng=rng, data=config.data, eval_size=config.eval_size,
                       loss="mse" if kind == "regression" else "cross_entropy",
                       n_in=dim, n_out=n_out, attrs=attrs)


def make_model(config: TrainConfig, data: TaskData) -> MLP:
    """A student MLP of the configured width and depth."""
    return MLP(data.n_in, data.n_out, width=config.width, depth=config.depth)
