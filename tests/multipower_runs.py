"""Three short runs whose losses follow a multi-power law (Luo et al. 2025), as CSV files
with their learning rates, for the command-line tests of ``--method multipower``."""

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
TRUTH = np.array([2.0, 0.6, 0.5, 400.0, 2.0, 0.6, 0.6])


def schedule_runs(folder: Path) -> list[str]:
    """Write the runs (``step``, ``lr``, ``loss`` every 50 steps) into ``folder``."""
    paths = []
    for name, spec in SCHEDULES.items():
        rates = parse_schedule(spec).rates
        steps = np.arange(100, rates.size, 50)
        loss = multipower_value_and_jacobian(ScheduleTerms(rates, steps), TRUTH, jacobian=False)
        path = Path(folder) / f"{name}.csv"
        pd.DataFrame({"step": steps, "lr": rates[steps], "loss": loss}).to_csv(path, index=False)
        paths.append(str(path))
    return paths
