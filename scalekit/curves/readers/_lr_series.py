"""The learning-rate series of a table: ``lr``, ``learning_rate`` and the trackers' names.

PyTorch Lightning's ``LearningRateMonitor`` logs ``lr-<Optimizer>`` (also
``lr-<Optimizer>/pg1``), Hugging Face's trainer ``learning_rate`` (``train/learning_rate``
in W&B and TensorBoard), and many scripts ``lr`` or ``train/lr``. The first such
column of a table becomes the frame's ``lr`` column: the rate at each logged step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: A column name that reads as the learning rate (after an optional ``split/`` prefix).
LR_NAME = re.compile(r"^(?:[\w.-]+/)?(?:lr|learning_rate|learning-rate|lr-[\w.-]+(?:/pg\d+)?)$",
                     re.IGNORECASE)


def find_lr_column(columns: Iterable[str]) -> str | None:
    """The first column named as a learning rate, or None."""
    return next((str(c) for c in columns if LR_NAME.match(str(c))), None)
