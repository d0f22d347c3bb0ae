"""K-class classification with the classes at the leaves of a tree.

The tree has ``degree`` children per node and ``levels`` levels, so
``K = degree ** levels`` classes. Every node carries a random prototype whose
norm halves at each level; an input is the sum of the prototypes on the path
from the root to its leaf plus isotropic noise. Near leaves share more of their
path and are harder to tell apart, so the error grows with K in a structured
way (the class-count law).

Options: ``degree`` (4), ``levels`` (2), ``dim`` (32), ``noise`` (0.5).
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_number
from scalekit.train.config import TrainConfig
from scalekit.train.models import MLP
from scalekit.train.tasks.base import TaskData, vector_task

DEFAULTS = {"degree": 4, "levels": 2, "dim": 32, "noise": 0.5}


def leaf_paths(degree: int, levels: int) -> np.ndarray:
    """Node index at each level on the path to every leaf, shape (K, levels).

    Nodes are numbered level by level, so node ``j`` of level ``l`` has index
    ``(degree**l - 1) // (degree - 1) - 1 + j`` among all non-root nodes.
    """
    leaves = np.arange(degree ** levels)
    paths = np.empty((len(leaves), levels), dtype=int)
    offset = 0
    for level in range(1, levels + 1):
        paths[:, level - 1] = offset + leaves // degree ** (levels - level)
        offset += degree ** level
    return paths


def make_data(config: TrainConfig) -> TaskData:
    """Draw the prototypes and the data for ``config.data_seed``."""
    opts = {**DEFAULTS, **config.options}
    degree = check_number("degree", opts["degree"], low=2, integer=True)
    levels = check_number("levels", opts["levels"], low=1, integer=True)
    dim = check_number("dim", opts["dim"], low=1, integer=True)
    noise = check_number("noise", opts["noise"], low=0)
    rng = np.random.default_rng(config.data_seed)
    paths = leaf_paths(degree, levels)
    level_of = np.concatenate([np.full(degree ** level, level) for level in range(1, levels + 1)])
    prototypes = rng.standard_normal((len(level_of), dim)) * (0.5 ** (level_of - 1))[:, None]
    centers = prototypes[paths].sum(axis=1)

    def draw(r: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = r.integers(0, len(centers), n)
        return centers[labels] + noise * r.standard_normal((n, dim)), labels

    classes = len(centers)
    return vector_task(draw, rng=rng, data=config.data, eval_size=config.eval_size,
                       loss="cross_entropy", n_in=dim, n_out=classes,
                       attrs={"classes": classes, "degree": degree, "levels": levels,
                              "input_dim": dim, "noise": noise})


def make_model(config: TrainConfig, data: TaskData) -> MLP:
    """An MLP classifier of the configured width and depth."""
    return MLP(data.n_in, data.n_out, width=config.width, depth=config.depth)
