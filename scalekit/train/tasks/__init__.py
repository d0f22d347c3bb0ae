"""The bundled tasks; each module has ``make_data(config)`` and ``make_model(config, data)``."""

from __future__ import annotations

import importlib
from types import ModuleType

from scalekit.checks import check_choice

__all__ = ["TASKS", "available_tasks", "get_task"]

TASKS = ("teacher_student", "char_lm", "next_pixel", "hierarchical", "residual_teacher")


def available_tasks() -> tuple[str, ...]:
    """Names of the bundled tasks."""
    return TASKS


def get_task(name: str) -> ModuleType:
    """The module of task ``name`` (imports torch)."""
    return importlib.import_module(f"scalekit.train.tasks.{check_choice('task', name, TASKS)}")
