"""A sweep with the early-leader trap, shared by the Optuna and Ray Tune tests.

Trial ``(size, variant)`` has the known curve ``L(t) = E + f A t^-1/2`` with
``E = 2.5 - 0.1 size``, ``A = 1 + size`` and a learning-rate penalty
``f = 1 + 0.25 variant``, times 0.2% log-normal noise: larger models start
higher and end lower (the curves of sizes k and k + 1 cross near t = 100), so
at steps 9, 27 and 81 the small models lead and at step 243 the largest one,
variant 0, wins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest


@dataclass(frozen=True)
class CrossingSweep:
    sizes: int = 6
    variants: int = 2
    steps: int = 243
    seed: int = 0

    @property
    def trials(self) -> list[tuple[int, int]]:
        """Every (size, variant), in a shuffled order."""
        grid = [(k, v) for k in range(self.sizes) for v in range(self.variants)]
        order = np.random.default_rng(self.seed).permutation(len(grid))
        return [grid[i] for i in order]

    def curve(self, size: int, variant: int, steps: int | None = None) -> np.ndarray:
        """Losses at steps 1 .. ``steps`` (default: all)."""
        n = steps or self.steps
        t = np.arange(1, self.steps + 1)
        noise = np.random.default_rng(100 * size + variant).normal(0.0, 0.002, self.steps)
        loss = (2.5 - 0.1 * size + (1 + 0.25 * variant) * (1 + size) * t ** -0.5) * np.exp(noise)
        return loss[:n]

    @property
    def best(self) -> tuple[int, int]:
        return min(self.trials, key=lambda kv: self.curve(*kv)[-1])


@pytest.fixture(scope="session")
def crossing() -> CrossingSweep:
    return CrossingSweep()
