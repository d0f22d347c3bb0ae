"""What every task hands the loop: a batch sampler, a validation set, a loss."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import torch
from torch.nn import functional as F

from scalekit.checks import fail

Sampler = Callable[["BatchStream", int], tuple[torch.Tensor, torch.Tensor]]
Draw = Callable[[dict[str, torch.Tensor], torch.Generator, int], tuple[torch.Tensor, torch.Tensor]]
Model = Callable[..., torch.Tensor]


class EvalMetrics(Protocol):
    """A task's own metrics, evaluated at every evaluation beside the validation loss.

    ``metrics(model)`` returns ``{name: value}`` for the frozen ``model`` (called as
    ``model(x)`` for the outputs and, for a GPT, ``model(x, hidden=True)`` for the final
    hidden states; run without gradients, in eval mode); each name becomes a metric of
    the run. ``to(device)`` returns the same metrics with their tensors on ``device``.
    """

    def __call__(self, model: Model) -> dict[str, float]: ...

    def to(self, device: torch.device) -> EvalMetrics: ...


class BatchStream:
    """A run's random source of training batches, seeded by ``seed`` (e.g. ``[data_seed, 1]``).

    Attributes
    ----------
    fresh : torch.Generator
        Lives on ``device`` and draws there the samples of a task drawn afresh every
        step, the row numbers of a finite training set and the window starts of a
        corpus, so no step copies anything from the host. A CPU and a GPU run draw
        different (equally distributed) batches.
    """

    def __init__(self, seed, device: torch.device | str = "cpu") -> None:
        child = np.random.SeedSequence(seed).spawn(1)[0]
        self.fresh = torch.Generator(device=device)
        self.fresh.manual_seed(int(child.generate_state(1, np.uint64)[0]))

    def state_dict(self) -> dict[str, Any]:
        """The generator's state, for a checkpoint."""
        return {"fresh": self.fresh.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` (the NumPy state older checkpoints hold is ignored)."""
        if "fresh" in state:
            self.fresh.set_state(state["fresh"])


@dataclass
class TaskData:
    """The data side of a task, made once per ``data_seed``.

    Attributes
    ----------
    sample : callable
        ``sample(stream, size) -> (x, y)``: a training batch drawn from the
        :class:`BatchStream` ``stream``. A
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
    metrics : EvalMetrics, optional
        The task's own metrics at every evaluation (next_pixel: a linear probe's
        accuracy and the completion of held-out images).
    """

    sample: Sampler
    val: tuple[torch.Tensor, torch.Tensor]
    loss: str
    n_in: int
    n_out: int
    tokens_per_sample: int = 1
    attrs: dict[str, Any] = field(default_factory=dict)
    error: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None
    metrics: EvalMetrics | None = None

    def to(self, device: torch.device) -> TaskData:
        """The same task with its validation set and training data on ``device``.

        Every bundled sampler has ``to``: over a finite training set or a corpus
        (:class:`IndexSampler`) it moves the data once, and each step draws the
        indices on the device with the stream's ``fresh`` generator and gathers the
        batch there; a task drawn afresh every step (:class:`FreshSampler`) moves
        its fixed tensors (a teacher's weights) once and draws each batch on the
        device with the stream's ``fresh`` generator.
        """
        return replace(self, sample=self.sample.to(device), val=tuple(t.to(device) for t in self.val),
                       metrics=None if self.metrics is None else self.metrics.to(device))

    def loss_of(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss of ``output`` against ``target``."""
        if self.loss == "mse":
            return F.mse_loss(output.float(), target)
        return F.cross_entropy(output.float().reshape(-1, output.shape[-1]), target.reshape(-1))

    def losses_of(self, outputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean loss of each of M models' ``outputs`` (shape ``(M, *output)``) against the
        one ``target``: :meth:`loss_of` of every model at once, shape ``(M,)``."""
        models = len(outputs)
        if self.loss == "mse":
            each = F.mse_loss(outputs.float(), target.expand_as(outputs), reduction="none")
        else:
            each = F.cross_entropy(outputs.float().reshape(-1, outputs.shape[-1]),
                                   target.expand(models, *target.shape).reshape(-1), reduction="none")
        return each.reshape(models, -1).mean(dim=1)


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

    The row numbers are drawn with the stream's ``fresh`` generator on its device, where
    ``x`` and ``y`` are (see :meth:`TaskData.to`), and the rows gathered there.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __call__(self, stream: BatchStream, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = draw_indices(stream, len(self.x), size)
        return self.x[rows], self.y[rows]

    def to(self, device: torch.device) -> IndexSampler:
        return IndexSampler(self.x.to(device), self.y.to(device))


def draw_indices(stream: BatchStream, high: int, size: int) -> torch.Tensor:
    """``size`` integers uniform in ``[0, high)``, drawn with the stream's ``fresh`` generator
    on its device."""
    return torch.randint(high, (size,), generator=stream.fresh, device=stream.fresh.device)


def index_sampler(x: torch.Tensor, y: torch.Tensor) -> Sampler:
    """Sampler drawing rows of a finite training set uniformly with replacement."""
    return IndexSampler(x, y)


class FreshSampler:
    """Draws a fresh batch every step with ``draw(tensors, generator, size)`` on the device
    of ``tensors`` (a teacher's weights, moved there once by :meth:`to`), from the stream's
    ``fresh`` generator."""

    def __init__(self, draw: Draw, tensors: dict[str, torch.Tensor]) -> None:
        self.draw, self.tensors = draw, tensors

    def __call__(self, stream: BatchStream, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.draw(self.tensors, stream.fresh, size)

    def to(self, device: torch.device) -> FreshSampler:
        return FreshSampler(self.draw, {k: t.to(device) for k, t in self.tensors.items()})


def vector_task(draw: Draw, tensors: dict[str, torch.Tensor], *, rng: np.random.Generator,
                data: int | None, eval_size: int, loss: str, n_in: int, n_out: int,
                attrs: dict[str, Any]) -> TaskData:
    """A task over vectors drawn by ``draw(tensors, generator, n) -> (x, y)``: float32
    inputs, and float32 (``"mse"``) or integer targets, made with the torch ``generator``
    on its device.

    The validation set is drawn first, on the CPU with a generator seeded from ``rng``;
    then either a finite training set of ``data`` samples from the same generator or,
    when ``data`` is None, a fresh batch at every step (:class:`FreshSampler`).
    """
    generator = torch.Generator().manual_seed(int(rng.integers(2 ** 63)))
    val = draw(tensors, generator, eval_size)
    if data is None:
        sample = FreshSampler(draw, tensors)
    else:
        sample = index_sampler(*draw(tensors, generator, data))
    return TaskData(sample=sample, val=val, loss=loss, n_in=n_in, n_out=n_out, attrs=attrs)
