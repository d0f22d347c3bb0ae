"""Autoregressive next-pixel prediction on scikit-learn's 8×8 digits.

Each of the 1,797 bundled images is a sequence of 64 pixels in raster order with
17 grey levels (0–16); a start token (17) is prepended and a small GPT predicts
every next pixel. The images are shuffled with ``data_seed``; the last 297 are
the validation set and ``data`` (at most 1,500) images the training set. A tiny
version of the autoregressive image-modelling sweeps of Henighan et al. (2020).

Options: none.
"""

from __future__ import annotations

import numpy as np
import torch

from scalekit.checks import check_number
from scalekit.train.config import TrainConfig
from scalekit.train.models import GPT
from scalekit.train.tasks.base import TaskData, index_sampler, task_options

LEVELS = 17
START = LEVELS
VALIDATION = 297


def make_data(config: TrainConfig) -> TaskData:
    """Shuffle and split the digits for ``config.data_seed``."""
    from sklearn.datasets import load_digits

    task_options(config, {})
    images = load_digits().images.reshape(-1, 64).astype(np.int64)
    images = images[np.random.default_rng(config.data_seed).permutation(len(images))]
    seqs = torch.from_numpy(np.concatenate([np.full((len(images), 1), START), images], axis=1))
    train, val = seqs[:-VALIDATION], seqs[-VALIDATION:][:config.eval_size]
    if config.data is not None:
        train = train[:check_number("data", config.data, low=1, high=len(train), integer=True)]
    return TaskData(sample=index_sampler(train[:, :-1], train[:, 1:]), val=(val[:, :-1], val[:, 1:]),
                    loss="cross_entropy", n_in=LEVELS + 1, n_out=LEVELS, tokens_per_sample=64,
                    attrs={"levels": LEVELS, "train_images": len(train)})


def make_model(config: TrainConfig, data: TaskData) -> GPT:
    """A GPT over the 18 symbols with a context of 64 pixels."""
    return GPT(data.n_in, 64, width=config.width, depth=config.depth)
