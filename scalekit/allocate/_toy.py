"""A pure-Python trainer that follows the allocator's trainer protocol (for tests and demos).

Run ``i`` is a model of ``N_i`` parameters whose loss after ``D`` tokens is the
Chinchilla law with a per-run hyper-parameter penalty (see
:mod:`scalekit.allocate._synthetic`); every run trains to the same compute, so
the sweep holds the early-leader trap. Points are a pure function of
``(seed, run, step)``, so a run advanced in any number of pieces, or resumed
after a kill, logs exactly the same points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalekit.allocate._synthetic import CHINCHILLA, chinchilla_loss
from scalekit.compute import training_flops


@dataclass
class SyntheticTrainer:
    """Trainer protocol: ``resource``, ``candidates()`` and ``advance(run, start, stop)``.

    ``resource`` is ``"compute"`` (every rung gives each run the same FLOPs: the
    early-leader setting) or ``"step"``.

    Parameters
    ----------
    sizes, variants : int
        Model sizes (log-spaced from ``min_params`` to ``max_params``) and runs per size.
    max_compute : float
        FLOPs every run trains to.
    tokens_per_step : float
        Batch size in tokens.
    points : int
        Points logged over a whole run (every ``max_steps // points`` steps).
    """

    seed: int = 0
    sizes: int = 9
    variants: int = 3
    min_params: float = 1e7
    max_params: float = 1.5e9
    max_compute: float = 1e20
    tokens_per_step: float = 2.0 ** 20
    points: int = 60
    noise: float = 0.003
    resource: str = "compute"

    def _runs(self) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed)
        rows = []
        for i, n in enumerate(np.geomspace(self.min_params, self.max_params, self.sizes)):
            for v in range(self.variants):
                per_step = training_flops(n, self.tokens_per_step)
                rows.append(dict(run=f"toy_n{i}_v{v}", params=float(n), index=len(rows),
                                 max_resource=float(np.floor(self.max_compute / per_step)),
                                 flops_per_unit=per_step,
                                 penalty=1.0 + abs(rng.normal(0.0, 0.06))))
        return pd.DataFrame(rows)

    def candidates(self) -> pd.DataFrame:
        """One row per run: ``run``, ``params``, ``max_resource`` and ``flops_per_unit``
        (in steps, or in FLOPs when ``resource`` is ``"compute"``)."""
        runs = self._runs()
        if self.resource == "compute":
            runs["max_resource"] = runs.max_resource * runs.flops_per_unit
            runs["flops_per_unit"] = 1.0
        return runs[["run", "params", "max_resource", "flops_per_unit"]]

    def advance(self, run: str, start: float, stop: float) -> pd.DataFrame:
        """Points logged while training ``run`` from ``start`` to ``stop`` (steps or FLOPs)."""
        row = self._runs().set_index("run").loc[run]
        if self.resource == "compute":
            start, stop = start / row.flops_per_unit, stop / row.flops_per_unit
        last = min(np.floor(stop * (1 + 1e-12)), row.max_resource)
        interval = max(1.0, np.floor(row.max_resource / self.points))
        first = (np.floor(start / interval) + 1) * interval
        steps = np.arange(first, last + 1, interval)
        if last == row.max_resource and last > start and (not len(steps) or steps[-1] != last):
            steps = np.append(steps, last)
        tokens = steps * self.tokens_per_step
        reducible = chinchilla_loss(row.params, tokens) - CHINCHILLA["E"]
        noise = np.array([np.random.default_rng([self.seed, int(row["index"]), int(s)])
                          .normal(0.0, self.noise) for s in steps])
        loss = (CHINCHILLA["E"] + row.penalty * reducible) * np.exp(noise)
        return pd.DataFrame({"step": steps.astype(int), "tokens": tokens,
                             "compute": steps * row.flops_per_unit, "loss": loss})
