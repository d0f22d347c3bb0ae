"""What every task hands the loop: a batch sampler, a validation set, a loss."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from scalekit.checks import fail

Sampler = Callable[[np.random.Generator, int], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class TaskData:
    """The data side of a task, made once per ``data_seed``.

    Attributes
    ----------
    sample : callable
        ``sample(rng, size) -> (x, y)``: a training batch drawn with ``rng``. A
        sampler with a ``to(device)`` method keeps its data on that device (see
        :meth:`to`).
    val : tuple of tensors
        Fixed validation inputs and targets.
    loss : {"mse", "cross_entropy"}
        Training and validation loss (mean over samples, and tokens for sequences).
    n_in, n_out : int
        Input features (or vocabulary) and outputs (or vocabulary).
    tokens_per_sample : int
        Tokens one sample contributes to D (1 for a vector sample).
    attrs : dict
        Run attributes the task adds (corpus hash, number of classes, …).
    error : callable, optional
        ``error(output, target)``: fraction of samples predicted wrongly, logged as
        the ``error`` column by classification tasks that set it
        (e.g. :func:`classification_error`).
    """

    sample: Sampler
    val: tuple[torch.Tensor, torch.Tensor]
    loss: str
    n_in: int
    n_out: int
    tokens_per_sample: int = 1
    attrs: dict[str, Any] = field(default_factory=dict)
    error: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None

    def to(self, device: torch.device) -> "TaskData":
        """The same task with its validation set and training data on ``device``.

        A sampler over a finite training set or a corpus (:class:`IndexSampler`,
        or any sampler with ``to``) moves its data once; each step then copies
        only the drawn indices (``size`` integers) to the device and gathers the
        batch there. A sampler without ``to`` (an endless stream drawn with NumPy)
        makes each batch on the host and copies it.
        """
        if hasattr(self.sample, "to"):
            sample = self.sample.to(device)
        else:
            def sample(rng: np.random.Generator, size: int, _draw=self.sample):
                x, y = _draw(rng, size)
                return x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        return replace(self, sample=sample, val=tuple(t.to(device) for t in self.val))

    def loss_of(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss of ``output`` against ``target``."""
        if self.loss == "mse":
            return F.mse_loss(output.float(), target)
        return F.cross_entropy(output.float().reshape(-1, output.shape[-1]), target.reshape(-1))


def task_options(config, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``config.options``; an option the task lacks is an error.

    Raises
    ------
    InputError
        ``config.options`` names a setting that is not in ``defaults`` (e.g. a typo,
        which would otherwise be ignored while still naming the run).
    """
    unknown = sorted(set(config.options) - set(defaults))
    if unknown:
        known = ", ".join(sorted(defaults)) or "none"
        raise fail("options", unknown[0], f"an option of the task {config.task!r} ({known})")
    return {**defaults, **config.options}


def classification_error(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Fraction of samples whose arg-max class is wrong at any position.

    ``target`` has shape ``(n,)`` or ``(n, steps)``; a sample with several steps
    counts as wrong when any of its steps is.
    """
    wrong = output.argmax(dim=-1) != target
    return wrong.reshape(len(wrong), -1).any(dim=1).float().mean()


class IndexSampler:
    """Draws rows of a finite training set ``(x, y)`` uniformly with replacement.

    The row numbers come from the NumPy generator on the host (so a CPU and a GPU
    run see the same batches); the rows are gathered wherever ``x`` and ``y`` are.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __call__(self, rng: np.random.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.from_numpy(rng.integers(0, len(self.x), size)).to(self.x.device,
                                                                        non_blocking=True)
        return self.x[rows], self.y[rows]

    def to(self, device: torch.device) -> "IndexSampler":
        return IndexSampler(self.x.to(device), self.y.to(device))


def index_sampler(x: torch.Tensor, y: torch.Tensor) -> Sampler:
    """Sampler drawing rows of a finite training set uniformly with replacement."""
    return IndexSampler(x, y)


def vector_task(draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]], *,
                rng: np.random.Generator, data: int | None, eval_size: int, loss: str,
                n_in: int, n_out: int, attrs: dict[str, Any]) -> TaskData:
    """A task over vectors drawn by ``draw(rng, n) -> (x, y)``.

    The validation set is drawn first; then either a finite training set of ``data``
    samples or, when ``data`` is None, a fresh batch at every step.
    """
    target_dtype = torch.float32 if loss == "mse" else torch.long

    def as_tensors(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=target_dtype)

    val = as_tensors(*draw(rng, eval_size))
    if data is None:
        def sample(batch_rng: np.random.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
            return as_tensors(*draw(batch_rng, size))
    else:
        sample = index_sampler(*as_tensors(*draw(rng, data)))
    return TaskData(sample=sample, val=val, loss=loss, n_in=n_in, n_out=n_out, attrs=attrs)
