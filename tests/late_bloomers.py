"""Late-bloomer Optuna studies: nine model sizes indexed 0-8, the bigger the slower to
start, the largest lowest at the end (issue 37 item 6).

A shape fixes how the curves bend; each size ``i`` (``N`` from 1e7 to 1e9 on a log
grid) has the loss ``(E + A / N**alpha + B * g(t / w)) * exp(noise)`` at step ``t``,
where the warm-up scale ``w`` grows ``warmup``-fold from the smallest to the largest
size (the larger a model, the later its loss falls) and ``g`` is the shape's decay:

- ``power``: ``u**-beta`` (the curve of tests/integrations/test_slow_starter.py);
- ``plateau``: ``(1 + u**2)**(-beta/2)`` — flat near the start, then a power decay
  (a large model sits on a plateau before it drops);
- ``exp``: ``0.8 exp(-u**beta) + 0.2 (1 + u)**-0.5`` (a stretched exponential with a
  slow power tail).

For ``plateau`` and ``exp`` every size starts from the same loss ``L0`` (the smallest
size's ``E + A / N**alpha`` plus ``B``) and falls towards its own ``E + A / N**alpha``:
``L = Linf + (L0 - Linf) * g``.

Every shape is checked to end with size 8 lowest (by ``margin`` at least, in
relative terms, noise-free) and with size 8 *not* lowest at the first rung, so a
pruner that ranks current values prunes it. :func:`study` runs the nine sizes in a
given order under a pruner, in real Optuna.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

SIZES = np.geomspace(1e7, 1e9, 9)


@dataclass(frozen=True)
class Shape:
    """One late-bloomer study shape (see the module docstring)."""

    name: str
    decay: str = "power"     # power | plateau | exp
    steps: int = 300
    beta: float = 0.5
    warmup: float = 12.0     # warm-up scale of size 8 over size 0
    scale: float = 1.0       # warm-up scale of size 0, in steps
    B: float = 10.0
    alpha: float = 0.34
    noise: float = 0.003

    def clean(self, i: int, t: np.ndarray) -> np.ndarray:
        """Noise-free loss of size ``i`` at steps ``t``."""
        size = SIZES[i]
        w = self.scale * self.warmup ** (np.log(size / SIZES[0]) / np.log(SIZES[-1] / SIZES[0]))
        u = np.asarray(t, float) / w
        floor = 1.7 + 3000.0 / size ** self.alpha
        if self.decay == "power":
            return floor + self.B * u ** -self.beta
        if self.decay == "plateau":
            g = (1.0 + u * u) ** (-self.beta / 2)
        else:
            g = 0.8 * np.exp(-u ** self.beta) + 0.2 * (1.0 + u) ** -0.5
        start = 1.7 + 3000.0 / SIZES[0] ** self.alpha + self.B
        return floor + (start - floor) * g

    def curves(self, seed: int) -> dict[int, np.ndarray]:
        """Each size's noisy loss at steps 1..``steps``."""
        rng = np.random.default_rng(seed)
        t = np.arange(1, self.steps + 1)
        return {i: self.clean(i, t) * np.exp(rng.normal(0, self.noise, self.steps))
                for i in range(len(SIZES))}

    def check(self, first_rung: int, margin: float = 0.01) -> None:
        """Raise unless size 8 ends lowest, by ``margin`` (relative, noise-free) over
        the next, and is not lowest at ``first_rung``."""
        end = np.array([self.clean(i, np.array([self.steps]))[0] for i in range(len(SIZES))])
        early = [self.clean(i, np.array([first_rung]))[0] for i in range(len(SIZES))]
        if (int(np.argmin(end)) != 8 or np.min(end[:8]) < (1 + margin) * end[8]
                or int(np.argmin(early)) == 8):
            raise ValueError(f"{self.name} is not a late-bloomer shape")


#: The shapes: the first is the one of tests/integrations/test_slow_starter.py (nine
#: sizes instead of seven); the others vary the decay, length, exponent, warm-up and noise.
SHAPES = (
    Shape("power-300"),
    Shape("power-slow", beta=0.3, warmup=20.0),
    Shape("power-long", steps=1000, beta=0.4, warmup=30.0),
    Shape("power-noisy", noise=0.01, warmup=8.0),
    Shape("plateau-300", decay="plateau", beta=0.7, warmup=8.0),
    Shape("plateau-long", decay="plateau", steps=900, scale=2.0, warmup=12.0, beta=0.8),
    Shape("exp-300", decay="exp", scale=3.0, warmup=6.0, B=6.0),
    Shape("exp-long", decay="exp", steps=800, scale=4.0, warmup=10.0, B=6.0),
    Shape("power-short", steps=120, beta=0.6, warmup=6.0),
    Shape("plateau-noisy", decay="plateau", scale=1.5, warmup=6.0, beta=0.8, noise=0.01),
)


def order_of(seed: int, *, rivals_first: int = 2) -> list[int]:
    """A shuffled order of the nine sizes with size 8 after at least ``rivals_first``
    others (the first trials pass every rung: it must meet rivals)."""
    order = [int(i) for i in np.random.default_rng(seed).permutation(len(SIZES))]
    if order.index(8) < rivals_first:
        order.remove(8)
        order.insert(rivals_first + 1, 8)
    return order


def study(optuna, pruner, shape: Shape, order: list[int], seed: int):
    """Run the sizes in ``order`` under ``pruner``; each size's state, the steps trained
    and the size with the lowest final value among the trials completed."""
    run = optuna.create_study(pruner=pruner)
    for i in order:
        run.enqueue_trial({"size": i})
    run.optimize(objective_of(optuna, shape, seed), n_trials=len(order))
    used = sum(t.user_attrs["steps"] for t in run.trials)
    states = {t.params["size"]: t.state for t in run.trials}
    return states, used, run.best_trial.params["size"]


def objective_of(optuna, shape: Shape, seed: int):
    """The objective of :func:`study` for ``shape``'s curves under ``seed``: trains the
    size suggested, reporting every step, and counts each step in ``trial.user_attrs``
    (``steps``, written when the trial ends, with the ``worker`` process's id)."""
    curves = shape.curves(seed)

    def objective(trial):
        size = trial.suggest_int("size", 0, len(SIZES) - 1)
        trained = 0
        try:
            for step, value in enumerate(curves[size], start=1):
                trained += 1
                trial.report(float(value), step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
        finally:
            trial.set_user_attr("steps", trained)
            trial.set_user_attr("worker", os.getpid())
        return float(value)

    return objective


def worker(storage: str, name: str, shape_name: str, seed: int, trials: int) -> None:
    """One worker process of a shared study: loads study ``name`` from ``storage`` with a
    ForecastPruner and runs ``trials`` of the queued sizes of the shape ``shape_name``."""
    import optuna

    from scalekit.integrations.optuna import ForecastPruner

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    shape = next(s for s in SHAPES if s.name == shape_name)
    pruner = ForecastPruner(min_resource=3, max_resource=shape.steps, reduction_factor=3)
    run = optuna.load_study(study_name=name, storage=storage, pruner=pruner)
    run.optimize(objective_of(optuna, shape, seed), n_trials=trials)
