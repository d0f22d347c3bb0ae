"""Bundled torch trainers that produce learning curves (torch is imported lazily).

``import scalekit.train`` is cheap: the configuration and sweep grid load
without torch; the loop, models, tasks and FLOP counting import torch
when first used.
"""

from __future__ import annotations

from scalekit.lazy import lazy_names

_LAZY = {
    "TrainConfig": "scalekit.train.config",
    "SweepSpec": "scalekit.train.sweep",
    "StoreLog": "scalekit.train.sweep",
    "run_sweep": "scalekit.train.sweep",
    "SweepResult": "scalekit.train.result",
    "available_tasks": "scalekit.train.tasks",
    "train": "scalekit.train.loop",
    "TrainedRun": "scalekit.train.loop",
    "pick_device": "scalekit.train.loop",
    "train_batched": "scalekit.train.batched",
    "task_trainer": "scalekit.train.allocation_trainer",
}

__all__ = list(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY)
