"""Autoregressive next-pixel prediction on scikit-learn's 8×8 digits.

Each of the 1,797 bundled images is a sequence of 64 pixels in raster order with
17 grey levels (0–16); a start token (17) is prepended and a small GPT predicts
every next pixel. The images are shuffled with ``data_seed``; the last 297 are
the validation set and ``data`` (at most 1,500) images the training set. A tiny
version of the autoregressive image-modelling sweeps of Henighan et al. (2020).

Besides the next-pixel loss, every evaluation scores the three targets of Yan et al.
(ICML 2026) on the held-out images (:class:`DigitMetrics`):

- ``probe_accuracy``: a linear probe (:func:`scalekit.train._probe.probe_accuracy`) on
  the frozen model's hidden state averaged over the 64 input positions, fitted on the
  first ``probe_images`` training images and their digit labels, scored on the held-out
  ones (higher is better; chance is about 0.1);
- ``completion_nll``: the negative log-likelihood of an image's bottom half (pixels
  32–63) given its top half, in nats per pixel, averaged over the held-out images;
- ``completion_error``: the mean absolute error of the greedy completion of the bottom
  half (each next pixel the most likely grey level, fed back), in grey levels divided by
  16, so 0 is a perfect completion and 1 the largest possible error.

Options: ``probe_images`` (training images the probe is fitted on, default 500).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from scalekit.checks import check_number
from scalekit.train._config import TrainConfig
from scalekit.train._models import GPT
from scalekit.train._probe import probe_accuracy
from scalekit.train.tasks.base import Model, TaskData, index_sampler, task_options

LEVELS = 17
START = LEVELS
VALIDATION = 297
HALF = 32
CLASSES = 10


def make_data(config: TrainConfig) -> TaskData:
    """Shuffle and split the digits for ``config.data_seed``."""
    from sklearn.datasets import load_digits

    options = task_options(config, {"probe_images": 500})
    digits = load_digits()
    order = np.random.default_rng(config.data_seed).permutation(len(digits.images))
    images = digits.images.reshape(-1, 64).astype(np.int64)[order]
    labels = torch.from_numpy(digits.target.astype(np.int64)[order])
    seqs = torch.from_numpy(np.concatenate([np.full((len(images), 1), START), images], axis=1))
    train, val = seqs[:-VALIDATION], seqs[-VALIDATION:][:config.eval_size]
    train_labels, val_labels = labels[:-VALIDATION], labels[-VALIDATION:][:config.eval_size]
    if config.data is not None:
        train = train[:check_number("data", config.data, low=1, high=len(train), integer=True)]
    probe = check_number("probe_images", options["probe_images"], low=CLASSES, integer=True)
    metrics = DigitMetrics(train[:probe, :-1], train_labels[:len(train)][:probe], val, val_labels)
    return TaskData(sample=index_sampler(train[:, :-1], train[:, 1:]), val=(val[:, :-1], val[:, 1:]),
                    loss="cross_entropy", n_in=LEVELS + 1, n_out=LEVELS, tokens_per_sample=64,
                    attrs={"levels": LEVELS, "train_images": len(train)}, metrics=metrics)


def make_model(config: TrainConfig, data: TaskData) -> GPT:
    """A GPT over the 18 symbols with a context of 64 pixels."""
    return GPT(data.n_in, 64, width=config.width, depth=config.depth)


@dataclass(frozen=True)
class DigitMetrics:
    """Probe accuracy and completion of held-out digits (see the module docstring).

    ``probe_inputs``: training sequences (start token and 63 pixels) with their
    ``probe_labels``; ``held_out``: held-out sequences (start token and 64 pixels) with
    their ``held_out_labels``.
    """

    probe_inputs: torch.Tensor
    probe_labels: torch.Tensor
    held_out: torch.Tensor
    held_out_labels: torch.Tensor

    def __call__(self, model: Model) -> dict[str, float]:
        inputs = self.held_out[:, :-1]
        train_features = model(self.probe_inputs, hidden=True).float().mean(dim=1)
        test_features = model(inputs, hidden=True).float().mean(dim=1)
        accuracy = probe_accuracy(train_features.cpu().numpy(), self.probe_labels.cpu().numpy(),
                                  test_features.cpu().numpy(), self.held_out_labels.cpu().numpy(),
                                  classes=CLASSES)
        return {"probe_accuracy": accuracy, "completion_nll": completion_nll(model, self.held_out),
                "completion_error": completion_error(model, self.held_out)}

    def to(self, device: torch.device) -> DigitMetrics:
        return DigitMetrics(*(t.to(device) for t in (self.probe_inputs, self.probe_labels,
                                                      self.held_out, self.held_out_labels)))


def completion_nll(model: Model, sequences: torch.Tensor) -> float:
    """Mean negative log-likelihood (nats per pixel) of the bottom half of each sequence
    (start token and 64 pixels) given its top half, by teacher forcing."""
    logits = model(sequences[:, :-1])[:, HALF:].float()
    return float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                 sequences[:, 1 + HALF:].reshape(-1)))


def greedy_completion(model: Model, sequences: torch.Tensor) -> torch.Tensor:
    """The bottom halves (``(n, 32)`` grey levels) the model writes after each sequence's
    start token and top half, one most likely grey level at a time."""
    prefix = sequences[:, :1 + HALF]
    for _ in range(64 - HALF):
        logits = model(prefix)[:, -1, :LEVELS]
        prefix = torch.cat([prefix, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return prefix[:, 1 + HALF:]


def completion_error(model: Model, sequences: torch.Tensor) -> float:
    """Mean absolute error of the greedy completion of the bottom halves, in grey levels
    divided by 16 (0: perfect, 1: the largest possible error)."""
    written = greedy_completion(model, sequences)
    return float((written - sequences[:, 1 + HALF:]).abs().float().mean() / (LEVELS - 1))
