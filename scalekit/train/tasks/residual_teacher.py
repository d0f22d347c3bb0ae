"""Deep random residual teacher, residual students of several depths.

The set-up of the depth law of Liu et al. (2026): a random residual network of
``teacher_depth`` blocks, ``h <- h + tanh(h W) V / sqrt(teacher_depth)``, labels the
inputs; residual students (:class:`~scalekit.train.models.ResidualMLP`) of varied
depth learn it, so that the loss falls with student depth.

Options: ``dim`` (32), ``teacher_depth`` (32), ``noise`` (0.05).
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_number
from scalekit.train.config import TrainConfig
from scalekit.train.models import ResidualMLP
from scalekit.train.tasks.base import TaskData, task_options, vector_task

DEFAULTS = {"dim": 32, "teacher_depth": 32, "noise": 0.05}


def make_data(config: TrainConfig) -> TaskData:
    """Draw the residual teacher and the data for ``config.data_seed``."""
    opts = task_options(config, DEFAULTS)
    dim = check_number("dim", opts["dim"], low=1, integer=True)
    depth = check_number("teacher_depth", opts["teacher_depth"], low=1, integer=True)
    noise = check_number("noise", opts["noise"], low=0)
    rng = np.random.default_rng(config.data_seed)
    ws = rng.standard_normal((depth, dim, dim)) * (2.0 / np.sqrt(dim))
    vs = rng.standard_normal((depth, dim, dim)) / np.sqrt(dim)
    readout = rng.standard_normal(dim) / np.sqrt(dim)

    def teacher(x: np.ndarray) -> np.ndarray:
        h = x
        for w, v in zip(ws, vs):
            h = h + np.tanh(h @ w) @ v / np.sqrt(depth)
        return h @ readout

    probe = teacher(rng.standard_normal((4096, dim)))
    center, spread = probe.mean(), probe.std()

    def draw(r: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        x = r.standard_normal((n, dim))
        y = (teacher(x) - center) / spread + noise * r.standard_normal(n)
        return x, y[:, None]

    return vector_task(draw, rng=rng, data=config.data, eval_size=config.eval_size, loss="mse",
                       n_in=dim, n_out=1,
                       attrs={"input_dim": dim, "teacher_depth": depth, "noise": noise})


def make_model(config: TrainConfig, data: TaskData) -> ResidualMLP:
    """A residual student of the configured width and depth."""
    return ResidualMLP(data.n_in, data.n_out, width=config.width, depth=config.depth)
