"""ForecastScheduler in a real local Ray Tune run on the early-leader trap (see conftest).

One Ray session for the module: Ray's start-up is most of the time.
"""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
from ray import tune  # noqa: E402
from ray.tune.schedulers import AsyncHyperBandScheduler  # noqa: E402

from scalekit.integrations.ray_tune import ForecastScheduler  # noqa: E402

# one local Ray cluster at a time: these run on one xdist worker (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

#: Steps reported: every step up to the first rung, then every third up to the second,
#: then every 27th (the forecasts need no more, and each report is a round trip in Ray).
REPORTED = [*range(1, 10), *range(12, 28, 3), *range(54, 244, 27)]


@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def run_tune(sweep, scheduler, path):
    """Run every trial of the sweep one after the other; returns {trial: last step}, best."""
    trials = sweep.trials

    def trainable(config):
        curve = sweep.curve(*trials[config["trial"]])
        for step in REPORTED:
            tune.report({"loss": float(curve[step - 1]), "step": step})

    tuner = tune.Tuner(
        trainable, param_space={"trial": tune.grid_search(list(range(len(trials))))},
        tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=scheduler,
                                    max_concurrent_trials=1, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(path), verbose=0))
    grid = tuner.fit()
    reached = {trials[r.config["trial"]]: int(r.metrics["step"]) for r in grid}
    best = grid.get_best_result(metric="loss", mode="min", scope="last")
    return reached, trials[best.config["trial"]]


@pytest.fixture(scope="module")
def runs(ray_session, crossing, tmp_path_factory):
    path = tmp_path_factory.mktemp("ray")
    return {
        "asha": run_tune(crossing, AsyncHyperBandScheduler(
            time_attr="step", max_t=243, grace_period=9, reduction_factor=3), path),
        "forecast": run_tune(crossing, ForecastScheduler(
            time_attr="step", max_t=243, grace_period=9, reduction_factor=3), path),
    }


def test_asha_stops_the_eventual_best(runs, crossing):
    reached, best = runs["asha"]
    assert reached[crossing.best] < 243
    assert best != crossing.best


def test_forecast_scheduler_keeps_the_best_and_saves_steps(runs, crossing):
    reached, best = runs["forecast"]
    assert reached[crossing.best] == 243
    assert best == crossing.best
    assert sum(reached.values()) <= 0.7 * 243 * len(crossing.trials)


def test_forecast_scheduler_keeps_the_slowest_starter_that_ends_best(ray_session, tmp_path):
    """The slow starter of ``test_slow_starter`` (its largest model warms up twelve times
    longer than the smallest and ends lowest): ASHA stops it, ForecastScheduler keeps it."""
    import numpy as np

    from integrations.test_slow_starter import SIZES, STEPS, loss

    steps = np.arange(1, STEPS + 1)
    rng = np.random.default_rng(0)
    curves = [loss(size, steps, rng.normal(0, 0.003, STEPS)) for size in SIZES]
    order = [5, 2, 3, 6, 4, 0, 1]  # the largest model fourth
    reported = [*range(1, 21), *range(30, STEPS + 1, 10)]

    def trainable(config):
        for step in reported:
            tune.report({"loss": float(curves[order[config["trial"]]][step - 1]), "step": step})

    reached = {}
    for name, scheduler in (
            ("asha", AsyncHyperBandScheduler(time_attr="step", max_t=STEPS, grace_period=3,
                                             reduction_factor=3)),
            ("forecast", ForecastScheduler(time_attr="step", max_t=STEPS, grace_period=3,
                                           reduction_factor=3))):
        grid = tune.Tuner(
            trainable, param_space={"trial": tune.grid_search(list(range(len(order))))},
            tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=scheduler,
                                        max_concurrent_trials=1, reuse_actors=True),
            run_config=tune.RunConfig(storage_path=str(tmp_path / name), verbose=0)).fit()
        reached[name] = {order[r.config["trial"]]: int(r.metrics["step"]) for r in grid}
    largest = len(SIZES) - 1
    assert reached["asha"][largest] < STEPS
    assert reached["forecast"][largest] == STEPS
    assert sum(reached["forecast"].values()) <= 0.7 * STEPS * len(SIZES)
