"""Runs whose losses follow a known multi-power law (Luo et al. 2025), as CSV files with
their learning rates, for the tests of ``--method multipower`` and its schedule search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.laws import ScheduleTerms, multipower_value_and_jacobian
from scalekit.schedules import parse_schedule

SCHEDULES = {"cos": "cosine:warmup=100,peak=1e-3,final=1e-4,total=3000",
             "const": "constant:warmup=100,peak=1e-3,total=3000",
             "two": "two_stage:warmup=100,peak=1e-3,second=3e-4,switch=1500,total=2500"}
#: L0, A, alpha, B, C, beta, gamma
TRUTH = (2.0, 0.6, 0.5, 400.0, 2.0, 0.6, 0.6)


def curve(spec: str, steps, truth=TRUTH) -> np.ndarray:
    """The law's loss at ``steps`` of the schedule ``spec``."""
    steps = np.asarray(steps)
    rates = parse_schedule(spec).rates_through(int(np.max(steps)))
    return multipower_value_and_jacobian(ScheduleTerms(rates, steps), truth, jacobian=False)


def schedule_runs(folder: Path, schedules=SCHEDULES, truth=TRUTH) -> list[str]:
    """Write one run per schedule (``step``, ``lr``, ``loss`` every 50 steps) into
    ``folder``; returns the paths."""
    paths = []
    for name, spec in schedules.items():
        rates = parse_schedule(spec).rates
        steps = np.arange(100, rates.size, 50)
        path = Path(folder) / f"{name}.csv"
        pd.DataFrame({"step": steps, "lr": rates[steps], "loss": curve(spec, steps, truth)}
                     ).to_csv(path, index=False)
        paths.append(str(path))
    return paths
