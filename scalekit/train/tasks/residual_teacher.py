"""Deep random residual teacher, residual students of several depths.

The set-up of the depth law of Liu et al. (2026): a random residual network of
``teacher_depth`` blocks, ``h <- h + tanh(h W) V / sqrt(teacher_depth)``, labels the
inputs; residual students (:class:`~scalekit.train._models.ResidualMLP`) of varied
depth learn it, so that the loss falls with student depth.

Options: ``dim`` (32), ``teacher_depth`` (32), ``noise`` (0.05).
"""

from __future__ import annotations

import numpy as np
import torch

from scalekit.checks import check_number
from scalekit.train._config import TrainConfig
from scalekit.train._models import ResidualMLP
from scalekit.train.tasks.base import TaskData, task_options, vector_task

DEFAULTS = {"dim": 32, "teacher_depth": 32, "noise": 0.05}


def _teacher(t: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The residual teacher's raw outputs at inputs ``x``."""
    h, depth = x, len(t["ws"])
    for w, v in zip(t["ws"], t["vs"], strict=True):
        h = h + torch.tanh(h @ w) @ v / depth ** 0.5
    return h @ t["readout"]


def make_data(config: TrainConfig) -> TaskData:
    """Draw the residual teacher and the data for ``config.data_seed``."""
    opts = task_options(config, DEFAULTS)
    dim = check_number("dim", opts["dim"], low=1, integer=True)
    depth = check_number("teacher_depth", opts["teacher_depth"], low=1, integer=True)
    noise = check_number("noise", opts["noise"], low=0)
    rng = np.random.default_rng(config.data_seed)
    teacher = {"ws": rng.standard_normal((depth, dim, dim)) * (2.0 / np.sqrt(dim)),
               "vs": rng.standard_normal((depth, dim, dim)) / np.sqrt(dim),
               "readout": rng.standard_normal(dim) / np.sqrt(dim)}
    teacher = {name: torch.as_tensor(value, dtype=torch.float32) for name, value in teacher.items()}
    probe = _teacher(teacher, torch.as_tensor(rng.standard_normal((4096, dim)), dtype=torch.float32))
    teacher["center"], teacher["spread"] = probe.mean(), probe.std(correction=0)

    def draw(t: dict[str, torch.Tensor], g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, dim, generator=g, device=g.device)
        y = ((_teacher(t, x) - t["center"]) / t["spread"]
             + noise * torch.randn(n, generator=g, device=g.device))
        return x, y[:, None]

    return vector_task(draw, teacher, rng=rng, data=config.data, eval_size=config.eval_size, loss="mse",
                       n_in=dim, n_out=1,
                       attrs={"input_dim": dim, "teacher_depth": depth, "noise": noise})


def make_model(config: TrainConfig, data: TaskData) -> ResidualMLP:
    """A residual student of the configured width and depth."""
    return ResidualMLP(data.n_in, data.n_out, width=config.width, depth=config.depth)
