"""Every training run sets its thread pools: one thread per pool unless
SCALEKIT_TRAIN_THREADS says otherwise, restored afterwards."""

from __future__ import annotations

import pytest
import torch
from threadpoolctl import threadpool_info

from scalekit.errors import InputError
from scalekit.train._batched import train_batched
from scalekit.train._config import TrainConfig
from scalekit.train._loop import train

CONFIG = TrainConfig(width=8, depth=1, steps=4, evals=2, eval_size=32, batch_size=8,
                     device="cpu")


def _pools_during(run, monkeypatch, threads=None):
    if threads is not None:
        monkeypatch.setenv("SCALEKIT_TRAIN_THREADS", str(threads))
    seen = []

    def log(name, attrs, points):
        seen.append((torch.get_num_threads(),
                     {pool["num_threads"] for pool in threadpool_info()}))

    before = torch.get_num_threads()
    run(log)
    assert torch.get_num_threads() == before
    return seen


@pytest.mark.parametrize("run", [lambda log: train(CONFIG, log=log),
                                 lambda log: train_batched([CONFIG, CONFIG.replace(seed=1)],
                                                           log=log)],
                         ids=["train", "train_batched"])
def test_runs_train_on_one_thread_of_each_pool(run, monkeypatch):
    torch.set_num_threads(2)
    try:
        seen = _pools_during(run, monkeypatch)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)                    # the train tests' setting (conftest)
    assert seen and all(pools == (1, {1}) for pools in seen)


def test_the_environment_sets_the_threads(monkeypatch):
    seen = _pools_during(lambda log: train(CONFIG, log=log), monkeypatch, threads=2)
    assert seen and all(pools == (2, {2}) for pools in seen)


def test_a_bad_thread_count_names_the_variable(monkeypatch):
    monkeypatch.setenv("SCALEKIT_TRAIN_THREADS", "0")
    with pytest.raises(InputError, match="`SCALEKIT_TRAIN_THREADS` is '0'"):
        train(CONFIG)
