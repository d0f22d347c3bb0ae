"""K-class classification with the classes at the leaves of a tree, flat or in stages.

The tree has ``degree`` children per node and ``levels`` levels, so
``K = degree ** levels`` classes. Every node carries a random prototype whose
norm shrinks by ``shrink`` at each level; an input is the sum of the prototypes
on the path from the root to its leaf plus isotropic noise. Near leaves share
more of their path and are harder to tell apart, so the error grows with K in a
structured way (the class-count law). With ``tied`` the children of every node share
one set of ``degree`` prototypes per level, so the class is a tuple of
independent digits, each read off the input on its own.

*Flat* prediction answers with one K-way classifier. *Staged* prediction
(chain of thought, Nadgir, Balasubramanian and Chaudhari) answers in steps
through a tree of chosen degrees ``stages = (d_1, ..., d_h)`` with
``prod d_i = K``: the class is written in mixed radix, most significant digit
first, and step ``i`` is its own MLP (:class:`StagedMLP`) choosing digit ``i`` among ``d_i`` options
from the input and the previous digits (one-hot). The steps are independent
classifiers trained side by side on the same batches, so each gets the flat
classifier's budget (steps, batch, width, depth). Training feeds the true
previous digits; that also gives the error of running the chain on its own
answers, since a sample is wrong exactly when some step is wrong and every
step before the first wrong one saw the true digits. The logged ``error`` is
that rate; the loss is the mean cross-entropy per step. Flat is
``stages = (K,)``.

Options: ``degree`` (4), ``levels`` (2), ``dim`` (32), ``noise`` (0.5),
``shrink`` (0.5), ``tied`` (False), ``stages`` (None: flat; a list of degrees or a string such
as ``"8x8"``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from scalekit.checks import check_choice, check_number, fail
from scalekit.train._config import TrainConfig
from scalekit.train._models import MLP, _Scheduled
from scalekit.train.tasks.base import TaskData, classification_error, task_options, vector_task

DEFAULTS = {"degree": 4, "levels": 2, "dim": 32, "noise": 0.5, "shrink": 0.5, "tied": False, "stages": None}

#: Logit added to the options a step does not have (its degree is below the widest step's).
_ABSENT = -1e4


def leaf_paths(degree: int, levels: int, *, tied: bool = False) -> np.ndarray:
    """Prototype index at each level on the path to every leaf, shape (K, levels).

    Nodes are numbered level by level, so node ``j`` of level ``l`` has index
    ``(degree**l - 1) // (degree - 1) - 1 + j`` among all non-root nodes. When
    ``tied``, level ``l`` has only ``degree`` prototypes, picked by the leaf's
    digit ``l``: indices ``(l - 1) * degree + digit``.
    """
    leaves = np.arange(degree ** levels)
    paths = np.empty((len(leaves), levels), dtype=int)
    offset = 0
    for level in range(1, levels + 1):
        node = leaves // degree ** (levels - level)
        paths[:, level - 1] = offset + (node % degree if tied else node)
        offset += degree if tied else degree ** level
    return paths


def parse_stages(stages, classes: int) -> tuple[int, ...]:
    """The step degrees ``(d_1, ..., d_h)`` from a list or ``"8x8"``; their product must be ``classes``."""
    if stages is None:
        return (classes,)
    parts = stages.lower().split("x") if isinstance(stages, str) else list(np.atleast_1d(stages))
    try:
        degrees = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise fail("stages", stages, "a list of integer degrees or a string such as '8x8'") from None
    for d in degrees:
        check_number("stages degree", d, low=2, integer=True)
    if math.prod(degrees) != classes:
        raise fail("stages", stages, f"degrees whose product is the number of classes, {classes}")
    return degrees


def step_inputs(x: torch.Tensor, labels: torch.Tensor,
                stages: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of every step: shapes ``(n, h, dim + sum d_i[:-1])`` and ``(n, h)``.

    Step ``i`` sees ``x`` followed by the one-hot digits of steps ``1..i-1``
    (zeros in the slots of later steps); its target is digit ``i`` of the label.
    Made on the device of ``x`` and ``labels``.
    """
    n, h = len(labels), len(stages)
    digits = torch.stack([labels // math.prod(stages[i + 1:]) % d for i, d in enumerate(stages)], dim=1)
    earlier = torch.cat([x.new_zeros(n, 0)] + [F.one_hot(digits[:, i], stages[i]).to(x.dtype)
                                               for i in range(h - 1)], dim=1)
    column = torch.arange(earlier.shape[1], device=x.device)
    seen = torch.stack([column < sum(stages[:i]) for i in range(h)])  # step i sees digits before i
    return torch.cat([x[:, None, :].expand(n, h, x.shape[1]), earlier[:, None, :] * seen], dim=2), digits


class StagedMLP(_Scheduled):
    """One MLP per step, all evaluated in one batched product.

    Step ``i`` reads row ``i`` of an ``(n, h, n_in)`` input through its own
    weights (``depth`` GELU layers of ``width``, initialised as
    :class:`torch.nn.Linear`) and scores ``max d_i`` options; options the step
    lacks get a logit of ``-1e4``, so they are never chosen and carry no loss.
    """

    def __init__(self, n_in: int, stages: tuple[int, ...], *, width: int, depth: int) -> None:
        super().__init__()
        sizes = [n_in] + [width] * depth + [max(stages)]
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(len(stages), a, b).uniform_(-a ** -0.5, a ** -0.5))
            for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        self.biases = nn.ParameterList(
            nn.Parameter(torch.empty(len(stages), b).uniform_(-a ** -0.5, a ** -0.5))
            for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        absent = torch.arange(sizes[-1])[None, :] >= torch.tensor(stages)[:, None]
        self.register_buffer("absent", absent.float() * _ABSENT, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.weights) - 1
        for layer, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.einsum("nhi,hio->nho", x, weight) + bias
            if layer < last:
                x = self._drop(F.gelu(x))
        return x + self.absent


def make_data(config: TrainConfig) -> TaskData:
    """Draw the prototypes and the data for ``config.data_seed``."""
    opts = task_options(config, DEFAULTS)
    degree = check_number("degree", opts["degree"], low=2, integer=True)
    levels = check_number("levels", opts["levels"], low=1, integer=True)
    dim = check_number("dim", opts["dim"], low=1, integer=True)
    noise = check_number("noise", opts["noise"], low=0)
    shrink = check_number("shrink", opts["shrink"], low=0, low_open=True)
    tied = check_choice("tied", opts["tied"], (False, True))
    classes = degree ** levels
    stages = parse_stages(opts["stages"], classes)
    rng = np.random.default_rng(config.data_seed)
    paths = leaf_paths(degree, levels, tied=tied)
    level_of = np.concatenate([np.full(degree if tied else degree ** level, level)
                               for level in range(1, levels + 1)])
    prototypes = rng.standard_normal((len(level_of), dim)) * (shrink ** (level_of - 1))[:, None]
    centers = {"centers": torch.as_tensor(prototypes[paths].sum(axis=1), dtype=torch.float32)}

    def draw(t: dict[str, torch.Tensor], g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        labels = torch.randint(0, classes, (n,), generator=g, device=g.device)
        x = t["centers"][labels] + noise * torch.randn(n, dim, generator=g, device=g.device)
        return (x, labels) if len(stages) == 1 else step_inputs(x, labels, stages)

    n_in = dim + sum(stages[:-1])
    data = vector_task(draw, centers, rng=rng, data=config.data, eval_size=config.eval_size,
                       loss="cross_entropy", n_in=n_in, n_out=max(stages),
                       attrs={"classes": classes, "degree": degree, "levels": levels,
                              "input_dim": dim, "noise": noise, "shrink": shrink,
                              "tied": tied, "stages": "x".join(map(str, stages)), "stage_count": len(stages)})
    data.error = classification_error
    return data


def make_model(config: TrainConfig, data: TaskData) -> MLP | StagedMLP:
    """An MLP classifier of the configured width and depth, or one per step when staged."""
    stages = parse_stages(task_options(config, DEFAULTS)["stages"], data.attrs["classes"])
    if len(stages) == 1:
        return MLP(data.n_in, data.n_out, width=config.width, depth=config.depth)
    return StagedMLP(data.n_in, stages, width=config.width, depth=config.depth)
