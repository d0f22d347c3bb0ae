"""Bundled torch trainers that produce learning curves (torch is imported lazily).

``import scalekit.train`` is cheap: the configuration and sweep grid load
without torch; the loop, models, tasks and FLOP counting import torch
when first used.
"""

from __future__ import annotations

from scalekit.lazy import lazy_names

_LAZY = {
    "TrainConfig": "scalekit.train._config",
    "SweepSpec": "scalekit.train._sweep",
    "StoreLog": "scalekit.train._sweep",
    "run_sweep": "scalekit.train._sweep",
    "SweepResult": "scalekit.train._result",
    "available_tasks": "scalekit.train.tasks",
    "train": "scalekit.train._loop",
    "TrainedRun": "scalekit.train._loop",
    "pick_device": "scalekit.train._loop",
    "train_batched": "scalekit.train._batched",
    "task_trainer": "scalekit.train._allocation_trainer",
}

__all__ = list(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY)
