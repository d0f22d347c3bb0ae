"""The training loop: one run, evaluated on a schedule, resumable from a checkpoint.

Read top to bottom: pick the device, make the data and the model, count the
FLOPs of one step, then step AdamW and evaluate at the configured steps. Every
evaluation becomes a point (step, samples, tokens, counted FLOPs and 6·N·D,
train and validation loss, the error rate and the task's own metrics where the
task defines them, wall time) handed to ``log`` and kept in the checkpoint, written after each
evaluation, so a killed run continues exactly where it stopped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from scalekit.checks import fail
from scalekit.compute import training_flops
from scalekit.errors import InputError
from scalekit.train._config import TrainConfig
from scalekit.train._flops import counted_step_flops
from scalekit.train._models import count_parameters
from scalekit.train.tasks import get_task
from scalekit.train.tasks.base import BatchStream, TaskData
from scalekit.train._threads import with_train_threads

Log = Callable[[str, dict[str, Any], list[dict[str, float]]], None]


@dataclass
class TrainedRun:
    """A finished run: its name, attributes and one row per evaluation."""

    name: str
    attrs: dict[str, Any]
    points: list[dict[str, float]]

    def frame(self) -> pd.DataFrame:
        """The run as a tidy curve frame (points plus run-level columns)."""
        frame = pd.DataFrame(self.points)
        frame.insert(0, "run", self.name)
        for key, value in self.attrs.items():
            if key not in frame and isinstance(value, (int, float, str, bool)):
                frame[key] = value
        return frame


def pick_device(name: str = "auto") -> torch.device:
    """``"auto"``: CUDA, then MPS, then CPU; otherwise the named device.

    Raises
    ------
    InputError
        The named device is ``cuda`` or ``mps`` and this machine's torch cannot use it.
    """
    has_mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    available = {"cuda": torch.cuda.is_available(), "mps": has_mps}
    if name != "auto":
        if not available.get(name, True):
            raise fail("device", name, "a device this machine's torch can use ('auto' picks one)")
        return torch.device(name)
    if available["cuda"]:
        return torch.device("cuda")
    if available["mps"]:
        return torch.device("mps")
    return torch.device("cpu")


def run_attributes(config: TrainConfig, data: TaskData, model: torch.nn.Module,
                   flops_per_step: int, device: torch.device) -> dict[str, Any]:
    """Run-level attributes stored with the curve."""
    settings = {k: v for k, v in config.to_dict().items()
                if k not in ("options", "device", "compile", "precision")}
    return {**settings, **count_parameters(model), **data.attrs,
            "flops_per_step": flops_per_step, "compute_convention": "counted",
            "tokens_per_sample": data.tokens_per_sample, "device": device.type,
            "precision": autocast_dtype(device, config.precision) or "fp32",
            "torch_version": torch.__version__}


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: TaskData, device: torch.device,
             chunk: int = 512, precision: str = "auto") -> dict[str, float]:
    """Mean validation loss (``val_loss``), where the task defines them ``error`` and the
    task's own metrics (:attr:`TaskData.metrics`), ``data`` on ``device`` (the sums of the
    loss stay there until the one read at the end)."""
    model.eval()
    x, y = data.val
    totals = {"val_loss": torch.zeros((), device=device)}
    if data.error is not None:
        totals["error"] = torch.zeros((), device=device)
    for start in range(0, len(x), chunk):
        xb, yb = x[start:start + chunk], y[start:start + chunk]
        with autocast(device, precision):
            output = model(xb)
            totals["val_loss"] += data.loss_of(output, yb) * len(xb)
        if data.error is not None:
            totals["error"] += data.error(output, yb) * len(xb)
    result = {name: float(total) / len(x) for name, total in totals.items()}
    if data.metrics is not None:
        with autocast(device, precision):
            result.update(data.metrics(model))
    model.train()
    return result


def autocast_dtype(device: torch.device, precision: str = "auto") -> str | None:
    """``"bf16"`` where ``precision`` asks for autocast on ``device``, else None.

    ``"auto"`` autocasts on a CUDA device whose hardware has bf16 (Ampere and later).
    """
    if precision == "bf16":
        return "bf16"
    if precision == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported():
        return "bf16"
    return None


def autocast(device: torch.device, precision: str = "auto"):
    """bf16 autocast where :func:`autocast_dtype` says so, nothing otherwise."""
    if autocast_dtype(device, precision) is None:
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a kill leaves the previous checkpoint intact


def build_run(config: TrainConfig, device=None) -> tuple[TaskData, torch.nn.Module, float]:
    """The data and the freshly initialised model (seeded by ``config.seed``), both on
    ``device``, and the counted FLOPs of one training step of ``config``, on a probe batch."""
    task = get_task(config.task)
    data = task.make_data(config)
    torch.manual_seed(config.seed)
    model = task.make_model(config, data)
    if device is not None:
        model, data = model.to(device), data.to(device)
    probe_x, probe_y = data.sample(BatchStream(0, device or "cpu"), config.batch_size)
    return data, model, float(counted_step_flops(model, data.loss_of, probe_x, probe_y))


@with_train_threads
def train(config: TrainConfig, *, log: Log | None = None, checkpoint: str | Path | None = None) -> TrainedRun:
    """Train one run and return its curve.

    Parameters
    ----------
    config : TrainConfig
        The run.
    log : callable, optional
        ``log(name, attrs, points)`` called after each evaluation with the new
        point, and once at start-up with the points already in the checkpoint
        (the receiver skips steps it has, see :class:`scalekit.train._sweep.StoreLog`).
    checkpoint : path, optional
        File to resume from (if present) and to write after every evaluation.
    """
    device = pick_device(config.device)
    data, model, flops_per_step = build_run(config, device)
    attrs = run_attributes(config, data, model, flops_per_step, device)
    params = attrs["params"]
    forward = torch.compile(model) if config.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
                                  fused=device.type == "cuda" or None)  # one kernel on a GPU
    batches = BatchStream([config.data_seed, 1], device)
    step, points, train_sum, train_count, elapsed = 0, [], torch.zeros((), device=device), 0, 0.0

    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and path.exists():
        state = torch.load(path, weights_only=True)
        if state["name"] != config.name:
            raise InputError(f"checkpoint holds run {state['name']!r}, not {config.name!r}", source=str(path))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        batches.load_state_dict(state["batches"])
        torch.set_rng_state(state["torch_rng"])
        if device.type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        step, points, elapsed = state["step"], state["points"], state["elapsed"]
        if log is not None and points:
            log(config.name, attrs, points)

    evals = set(config.eval_steps())
    model.train()
    started = time.perf_counter() - elapsed
    while step < config.steps:
        lr, dropout = config.lr_at(step), config.dropout_at(step)
        if lr != optimizer.param_groups[0]["lr"]:
            for group in optimizer.param_groups:
                group["lr"] = lr
        if dropout != model.dropout_rate:
            model.set_dropout(dropout)
        x, y = data.sample(batches, config.batch_size)  # drawn on the device
        with autocast(device, config.precision):
            loss = data.loss_of(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        train_sum, train_count = train_sum + loss.detach().float(), train_count + 1  # no sync per step

        if step in evals:
            samples = step * config.batch_size
            tokens = samples * data.tokens_per_sample
            metrics = evaluate(model, data, device, precision=config.precision)
            point = {"step": step, "samples": samples, "tokens": tokens,
                     "compute": float(step * flops_per_step), "compute_6nd": training_flops(params, tokens),
                     "loss": metrics["val_loss"], **metrics, "train_loss": float(train_sum) / train_count,
                     "wall_time": time.perf_counter() - started}
            points.append(point)
            train_sum, train_count = torch.zeros((), device=device), 0
            if log is not None:
                log(config.name, attrs, [point])
            if path is not None:
                _save(path, {"name": config.name, "model": model.state_dict(),
                             "optimizer": optimizer.state_dict(), "batches": batches.state_dict(),
                             "torch_rng": torch.get_rng_state(), "step": step, "points": points,
                             "elapsed": point["wall_time"],
                             **({"cuda_rng": torch.cuda.get_rng_state(device)}
                                if device.type == "cuda" else {})})
    return TrainedRun(config.name, attrs, points)
