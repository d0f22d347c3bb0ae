"""Synthetic model ladders with a known truth, to measure the task law's coverage.

Each run's task loss follows a Chinchilla law in (N, D) times the run's own offset
(``exp(run_noise * e)``, held over its checkpoints) and a checkpoint's noise; its
accuracy is a step-2 law of that loss (the sigmoid, or the log-sigmoid of task
cross-entropy) plus an evaluation's noise. The target run is
drawn the same way, so an interval that holds its accuracy 95% of the time is right.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.laws import get_law

#: A ladder like OLMo's: four sizes at 1, 2, 5 and 10 x Chinchilla's 20 tokens a parameter.
SIZES = (1.9e8, 3.7e8, 7.6e8, 1.3e9)
MULTIPLES = (1, 2, 5, 10)
STEP1_TRUTH = {"E": 0.35, "A": 60.0, "B": 400.0, "alpha": 0.3, "beta": 0.3}
STEP2_TRUTH = {"a": -0.6, "x0": 0.9, "k": 6.0, "b": 0.95}


@dataclass(frozen=True)
class SyntheticRun:
    """A run with the attributes the task law reads (those of a read ladder run)."""

    name: str
    params: float
    tokens: np.ndarray
    table: pd.DataFrame
    source: str = "synthetic"
    attributes: dict = field(default_factory=dict)


def synthetic_run(params: float, tokens: float, rng: np.random.Generator, *, name: str,
                  columns: tuple[str, str], checkpoints: int = 30, run_noise: float = 0.01,
                  checkpoint_noise: float = 0.004, eval_noise: float = 0.01,
                  step1: Mapping[str, float] = STEP1_TRUTH,
                  step2: Mapping[str, float] = STEP2_TRUTH,
                  step2_law: str = "sigmoid") -> SyntheticRun:
    """One run of ``checkpoints`` evaluations up to ``tokens`` (columns: loss, accuracy)."""
    seen = np.linspace(tokens / checkpoints, tokens, checkpoints)
    loss = get_law("chinchilla").predict({"params": np.full(checkpoints, params),
                                          "tokens": seen}, dict(step1))
    loss = loss * np.exp(run_noise * rng.standard_normal()
                         + checkpoint_noise * rng.standard_normal(checkpoints))
    accuracy = get_law(step2_law).predict({"x": loss}, dict(step2))
    accuracy = accuracy + eval_noise * rng.standard_normal(checkpoints)
    table = pd.DataFrame({"throughput/total_tokens": seen, columns[0]: loss,
                          columns[1]: accuracy})
    return SyntheticRun(name=name, params=float(params), tokens=seen, table=table)


def synthetic_ladder(rng: np.random.Generator, *, columns: tuple[str, str],
                     **noise) -> list[SyntheticRun]:
    """The 16 runs of :data:`SIZES` x :data:`MULTIPLES`."""
    return [synthetic_run(n, 20 * k * n, rng, name=f"{n:.2g}-{k}xC", columns=columns, **noise)
            for n in SIZES for k in MULTIPLES]
