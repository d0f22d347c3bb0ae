"""CommitScheduler in a real local Ray Tune run, on a sweep whose truth is known.

Trials: 4 sizes x 3 schedule lengths x 2 learning rates. Each ends on the law
``L(N, D) = 2 + (300/N^0.3 + 300/D^0.3) p`` (``p = 1.04`` at the worse rate) and lies
``8% (1 - f)`` above the law's loss for a schedule ending there at share ``f`` of its
schedule (a cosine-like decay). The scheduler must finish the trial the law says is
best, stop the others, spend what the replay spends, and decide as the replay does.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ray = pytest.importorskip("ray")
from ray import tune

from scalekit.allocate import _metrics as metrics
from scalekit.allocate._commit import CommitLoop, CommitPolicy
from scalekit.allocate._engine import drive
from scalekit.allocate._replay import reveal
from scalekit.allocate._sweep import sweep_from_frame
from scalekit.integrations.ray_commit import CommitScheduler

# one local Ray cluster at a time: these run on one xdist worker (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

SIZES = tuple(np.geomspace(1e7, 1e9, 4))
LENGTHS = (30, 60, 120)
RATES = (1e-3, 3e-3)
TOKENS_PER_STEP = 4e6
SHARE = 0.1


def loss(n: float, length: int, rate: float, step) -> np.ndarray:
    step = np.asarray(step, float)
    end = 2 + (300 / n ** 0.3 + 300 / (step * TOKENS_PER_STEP) ** 0.3) * (
        1.04 if rate == 1e-3 else 1.0)
    return end * (1 + 0.08 * (1 - step / length))


def configs() -> list[dict]:
    return [{"params": n, "max_t": t, "lr": r, "tokens": TOKENS_PER_STEP}
            for n in SIZES for t in LENGTHS for r in RATES]


def name(config: dict) -> str:
    return f"n{config['params']:.0e}-T{config['max_t']}-lr{config['lr']}"


def sweep():
    rows = [pd.DataFrame({"run": name(c), "step": np.arange(1, c["max_t"] + 1),
                          "compute": 6 * c["params"] * TOKENS_PER_STEP
                          * np.arange(1, c["max_t"] + 1),
                          "loss": loss(c["params"], c["max_t"], c["lr"],
                                       np.arange(1, c["max_t"] + 1)),
                          "params": c["params"]}) for c in configs()]
    return sweep_from_frame(pd.concat(rows), resource="step")


def trainable(config):
    """Reports every step, with a checkpoint of the step reached (to resume after a pause)."""
    start = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            start = json.loads((Path(folder) / "state.json").read_text())["step"]
    for step in range(start + 1, config["max_t"] + 1):
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "state.json").write_text(json.dumps({"step": step}))
            tune.report({"loss": float(loss(config["params"], config["max_t"], config["lr"],
                                            step)), "step": step},
                        checkpoint=tune.Checkpoint.from_directory(folder))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        scheduler = CommitScheduler(budget=SHARE, time_attr="step", tokens_key="tokens")
        grid = tune.Tuner(
            trainable, param_space={"params": tune.grid_search(list(SIZES)),
                                    "max_t": tune.grid_search(list(LENGTHS)),
                                    "lr": tune.grid_search(list(RATES)),
                                    "tokens": TOKENS_PER_STEP},
            tune_config=tune.TuneConfig(metric="loss", mode="min", scheduler=scheduler,
                                        reuse_actors=True),
            run_config=tune.RunConfig(storage_path=str(tmp_path_factory.mktemp("ray")),
                                      verbose=0)).fit()
    finally:
        ray.shutdown()
    return scheduler, grid


def test_commit_scheduler_finishes_the_best_predicted_trial_and_stops_the_rest(tuned):
    scheduler, grid = tuned
    truth = sweep()
    budget = SHARE * truth.total_compute()
    ids = {run: name(config) for run, config in scheduler.configs.items()}
    reached = {ids[run]: int(step) for run, step in scheduler.reached.items()}
    assert len(reached) == len(configs()) == len(grid)
    committed = ids[next(d for d in scheduler.decisions if d["action"] == "commit")["runs"][0]]
    # the replay of the same trials on their complete curves commits to the same run
    loop = CommitLoop(truth, CommitPolicy(), budget)
    replayed = drive(loop.steps(), reveal(truth))
    assert committed == next(d for d in loop.decisions if d["action"] == "commit")["runs"][0]
    # it is finished, ends lowest of all trials, within 4% of the best any single run
    # reaches within the budget (computed in hindsight from the known curves)
    assert reached[committed] == truth.max_resource[committed]
    finals = {name(c): float(loss(c["params"], c["max_t"], c["lr"], reached[name(c)]))
              for c in configs() if reached[name(c)]}
    assert min(finals, key=finals.get) == committed
    hindsight = metrics.hindsight_loss(truth.curves, budget)
    assert finals[committed] <= 1.04 * hindsight
    # the trials no decision names never ran; the rest stopped where their order ended
    named = {ids[r] for d in scheduler.decisions for r in d["runs"]}
    assert all(reached[run] == 0 for run in reached if run not in named)
    assert sum(run not in named for run in reached) >= 10
    assert reached == {run: int(np.ceil(x - 1e-9)) for run, x in replayed.reached.items()}
    # it spends what the replay spends (to within one step per order), no more than the
    # budget, a tenth of training every trial
    spent = sum(truth.flops_per_unit[r] * s for r, s in reached.items())
    assert replayed.spent * (1 - 1e-9) <= spent <= min(replayed.spent, budget) + sum(
        truth.flops_per_unit[r] for r in named)
    assert abs(scheduler.spent - spent) <= 1e-6 * spent
    assert scheduler.law is not None
