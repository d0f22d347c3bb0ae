"""Bundled torch trainers that produce learning curves (torch is imported lazily).

``import scalekit.train`` is cheap: the configuration and sweep grid load
without torch; the loop, models, tasks and FLOP counting import torch
when first used.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "TrainConfig": "scalekit.train.config",
    "SweepSpec": "scalekit.train.sweep",
    "StoreLog": "scalekit.train.sweep",
    "run_sweep": "scalekit.train.sweep",
    "available_tasks": "scalekit.train.tasks",
    "train": "scalekit.train.loop",
    "TrainedRun": "scalekit.train.loop",
    "pick_device": "scalekit.train.loop",
    "train_batched": "scalekit.train.batched",
    "task_trainer": "scalekit.train.allocation_trainer",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'scalekit.train' has no attribute {name!r}")
