"""Typed settings of one training run (no torch here: importing this is cheap)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalekit.checks import check_choice, check_number

DROPOUT_SCHEDULES = ("constant", "front_loaded")
LR_SCHEDULES = ("constant", "cosine")
DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides one run; two equal configs give the same curve.

    Parameters
    ----------
    task : str
        Name of a bundled task (see :func:`scalekit.train.tasks.available_tasks`).
    width, depth : int
        Hidden width (or model dimension) and number of hidden layers (or blocks).
    steps : int
        Optimiser steps.
    data : int or None
        Size of the training set in samples (sequences for language tasks); ``None``
        draws a fresh batch every step where the task can (an endless stream).
    batch_size : int
        Samples per step.
    lr : float
        Peak learning rate of AdamW.
    lr_schedule : {"constant", "cosine"}
        ``"cosine"`` decays to 10% of ``lr`` over the run after a 2% warm-up.
    weight_decay : float
        AdamW weight decay.
    dropout : float
        Average dropout rate over the run.
    dropout_schedule : {"constant", "front_loaded"}
        ``"front_loaded"`` decays linearly from ``2 * dropout`` to 0 so the average
        over the run is ``dropout``.
    seed : int
        Seed of the initialisation and of dropout.
    data_seed : int
        Seed of the task (teacher, data set, batch order); runs that differ only in
        ``seed`` see the same data.
    evals : int
        Number of evaluations, spaced log-uniformly from step 1 to the last step
        (fewer when steps are too few to space them).
    eval_size : int
        Validation samples.
    device : {"auto", "cpu", "cuda", "mps"}
        ``"auto"`` picks CUDA, then MPS, then CPU.
    compile : bool
        Wrap the model in ``torch.compile``.
    precision : {"auto", "bf16", "fp32"}
        ``"auto"``: bf16 autocast on a CUDA device that has bf16, float32 elsewhere;
        ``"bf16"`` autocasts on any device (CPU included); ``"fp32"`` never does.
        Weights, optimiser state and losses stay float32 in every case.
    options : dict
        Task-specific settings (e.g. ``{"degree": 3, "levels": 2}``).
    """

    task: str = "teacher_student"
    width: int = 64
    depth: int = 2
    steps: int = 500
    data: int | None = None
    batch_size: int = 64
    lr: float = 3e-3
    lr_schedule: str = "constant"
    weight_decay: float = 0.0
    dropout: float = 0.0
    dropout_schedule: str = "constant"
    seed: int = 0
    data_seed: int = 0
    evals: int = 12
    eval_size: int = 1024
    device: str = "auto"
    compile: bool = False
    precision: str = "auto"
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("width", "depth", "steps", "batch_size", "evals", "eval_size"):
            check_number(name, getattr(self, name), low=1, integer=True)
        if self.data is not None:
            check_number("data", self.data, low=1, integer=True)
        check_number("lr", self.lr, low=0, low_open=True)
        check_number("weight_decay", self.weight_decay, low=0)
        front_loaded = self.dropout_schedule == "front_loaded"
        check_number("dropout", self.dropout, low=0, high=0.5 if front_loaded else 1,
                     high_open=not front_loaded)
        check_number("seed", self.seed, low=0, integer=True)
        check_number("data_seed", self.data_seed, low=0, integer=True)
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_choice("dropout_schedule", self.dropout_schedule, DROPOUT_SCHEDULES)
        check_choice("device", self.device, DEVICES)
        check_choice("precision", self.precision, PRECISIONS)

    @property
    def name(self) -> str:
        """A run name that is unique to the settings that change the curve or its points."""
        parts = [self.task, f"w{self.width}", f"d{self.depth}", f"s{self.steps}",
                 f"n{self.data if self.data is not None else 'inf'}", f"b{self.batch_size}",
                 f"lr{self.lr:g}"]
        if self.lr_schedule != "constant":
            parts.append(self.lr_schedule)
        if self.weight_decay:
            parts.append(f"wd{self.weight_decay:g}")
        if self.dropout:
            parts.append(f"p{self.dropout:g}" + ("fl" if self.dropout_schedule == "front_loaded" else ""))
        if self.evals != TrainConfig.evals or self.eval_size != TrainConfig.eval_size:
            parts.append(f"e{self.evals}x{self.eval_size}")  # a resume must not reuse other points
        parts += [f"seed{self.seed}", f"ds{self.data_seed}"]
        parts += [f"{key}{value}" for key, value in sorted(self.options.items())]
        return "-".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain values (for run attributes and reports)."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    def dropout_at(self, step: int) -> float:
        """Dropout rate used at ``step`` (0-based) under the schedule.

        The front-loaded rate at the midpoint of step ``t`` is ``2 p (1 - (t + 1/2) / T)``,
        whose mean over the ``T`` steps is exactly ``p``.
        """
        if self.dropout_schedule == "constant":
            return self.dropout
        return 2.0 * self.dropout * (1.0 - (step + 0.5) / self.steps)

    def lr_at(self, step: int) -> float:
        """Learning rate used at ``step`` (0-based)."""
        if self.lr_schedule == "constant":
            return self.lr
        warmup = max(1, self.steps // 50)
        if step < warmup:
            return self.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, self.steps - warmup)
        return self.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))

    def eval_steps(self) -> list[int]:
        """Steps after which the model is evaluated: log-spaced from 1 to the last step."""
        grid = np.round(np.geomspace(1, self.steps, self.evals)) if self.evals > 1 else []
        return [int(s) for s in np.unique(np.append(grid, self.steps))]
