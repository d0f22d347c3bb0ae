"""ForecastPruner keeps the eventual best trial when it starts slowest (issue 27).

A study of seven model sizes N from 1e7 to 1e9 in a shuffled order, 300 steps each,
whose loss is ``1.7 + 3000/N^0.34 + 10/(t/s)^0.5`` times log-normal noise, with a
warm-up scale ``s`` growing twelve-fold from the smallest to the largest model: the
larger a model, the later it overtakes the others, and the largest ends lowest.
Optuna's own SuccessiveHalvingPruner prunes the largest model; the forecast pruner
keeps it to the end, at no more than 70% of the steps of no pruning. Real Optuna.
"""

from __future__ import annotations

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")
from optuna.trial import TrialState

from scalekit.integrations.optuna import ForecastPruner

optuna.logging.set_verbosity(optuna.logging.WARNING)
SIZES = np.geomspace(1e7, 1e9, 7)
STEPS = 300


def loss(size: float, steps: np.ndarray, noise: np.ndarray) -> np.ndarray:
    warmup = 12.0 ** (np.log(size / 1e7) / np.log(100.0))  # 1 at 1e7, 12 at 1e9
    return (1.7 + 3000.0 / size ** 0.34 + 10.0 / (steps / warmup) ** 0.5) * np.exp(noise)


def study(pruner, order: list[int], seed: int) -> tuple[dict[int, TrialState], int]:
    """Run the sizes in ``order`` under ``pruner``; each size's state and the steps trained."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, STEPS + 1)
    curves = {i: loss(SIZES[i], steps, rng.normal(0, 0.003, STEPS)) for i in range(len(SIZES))}
    run = optuna.create_study(pruner=pruner)
    for i in order:
        run.enqueue_trial({"size": i})
    used = [0]

    def objective(trial):
        size = trial.suggest_int("size", 0, len(SIZES) - 1)
        for step, value in zip(steps, curves[size], strict=True):
            used[0] += 1
            trial.report(float(value), int(step))
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(value)

    run.optimize(objective, n_trials=len(order))
    return {t.params["size"]: t.state for t in run.trials}, used[0]


@pytest.mark.slow
@pytest.mark.parametrize("order_seed, noise_seed", [(1, 0), (2, 1), (3, 2)])
def test_the_forecast_pruner_keeps_the_slowest_starter_that_ends_best(order_seed, noise_seed):
    largest = len(SIZES) - 1
    order = [int(i) for i in np.random.default_rng(order_seed).permutation(len(SIZES))]
    if order.index(largest) < 2:  # the first trials pass every rung: it must meet rivals
        order.remove(largest)
        order.insert(3, largest)
    optuna_states, _ = study(optuna.pruners.SuccessiveHalvingPruner(
        min_resource=3, reduction_factor=3), order, noise_seed)
    states, used = study(ForecastPruner(min_resource=3, max_resource=STEPS, reduction_factor=3),
                         order, noise_seed)
    assert optuna_states[largest] == TrialState.PRUNED
    assert states[largest] == TrialState.COMPLETE
    assert used <= 0.7 * STEPS * len(SIZES)
