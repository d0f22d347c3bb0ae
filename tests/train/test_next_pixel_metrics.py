"""next_pixel's own metrics: the linear probe, the completion NLL and the greedy completion,
logged at every evaluation by both trainers and stored as metrics of the run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from scalekit.curves import CurveStore
from scalekit.train._batched import train_batched
from scalekit.train._config import TrainConfig
from scalekit.train._loop import train
from scalekit.train._probe import probe_accuracy
from scalekit.train._sweep import StoreLog
from scalekit.train.tasks import next_pixel

OWN = ("probe_accuracy", "completion_nll", "completion_error")
TINY = TrainConfig(task="next_pixel", width=16, depth=1, batch_size=16, eval_size=48, steps=30,
                   evals=3, device="cpu", options={"probe_images": 200})


def _blobs(rng, n, centres, spread):
    labels = rng.integers(len(centres), size=n)
    return centres[labels] + spread * rng.standard_normal((n, centres.shape[1])), labels


def test_probe_separates_separable_features_and_is_at_chance_on_random_labels():
    rng = np.random.default_rng(0)
    centres = 5.0 * rng.standard_normal((10, 16))
    x, y = _blobs(rng, 600, centres, 0.3)
    t, u = _blobs(rng, 600, centres, 0.3)
    assert probe_accuracy(x, y, t, u, classes=10) == 1.0
    scores = [probe_accuracy(x, rng.integers(10, size=600), t, rng.integers(10, size=600), classes=10)
              for _ in range(5)]
    assert 0.06 < np.mean(scores) < 0.14                   # chance is 0.1 (sd of a mean ~0.006)


def test_probe_is_exact_on_two_classes_split_by_one_feature_among_noise():
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((400, 5))
    labels = (noise[:, 0] > 0).astype(int)                 # a threshold at 0 on feature 0
    features = noise + 4 * np.where(labels, 1, -1)[:, None] * np.eye(5)[0]
    assert probe_accuracy(features[:200], labels[:200], features[200:], labels[200:],
                          classes=2) == 1.0


def _model():
    torch.manual_seed(3)
    data = next_pixel.make_data(TINY)
    return next_pixel.make_model(TINY, data).eval(), data


@torch.no_grad()
def test_completion_nll_equals_a_slow_pixel_by_pixel_computation():
    model, data = _model()
    images = data.metrics.held_out[:4]
    total, count = 0.0, 0
    for image in images:
        for j in range(1 + next_pixel.HALF, 65):            # each bottom-half pixel from its prefix alone
            logits = model(image[None, :j])[0, -1]
            total -= float(F.log_softmax(logits.double(), dim=-1)[image[j]])
            count += 1
    assert count == 4 * 32
    assert next_pixel.completion_nll(model, images) == pytest.approx(total / count, rel=1e-5)


@torch.no_grad()
def test_greedy_completion_equals_a_slow_one_image_at_a_time_loop():
    model, data = _model()
    images = data.metrics.held_out[:3]
    expected = []
    for image in images:
        prefix = image[:1 + next_pixel.HALF].tolist()
        while len(prefix) < 65:
            scores = model(torch.tensor([prefix]))[0, -1, :next_pixel.LEVELS].tolist()
            prefix.append(max(range(len(scores)), key=scores.__getitem__))
        expected.append(prefix[1 + next_pixel.HALF:])
    written = next_pixel.greedy_completion(model, images)
    assert written.tolist() == expected
    error = np.abs(np.array(expected) - images[:, 1 + next_pixel.HALF:].numpy()).mean() / 16
    assert next_pixel.completion_error(model, images) == pytest.approx(error)


def test_both_trainers_store_the_metrics_at_every_evaluation(tmp_path):
    path = tmp_path / "runs.db"
    with StoreLog(path) as log:
        alone = train(TINY, log=log)
    with StoreLog(tmp_path / "b.db") as log:
        together = train_batched([TINY.replace(seed=1), TINY], log=log)[1]
    steps = TINY.eval_steps()
    with CurveStore(path) as store:
        for metric in OWN:
            frame = store.curves(metric=metric).frame
            assert frame["step"].tolist() == steps
            assert frame[metric].tolist() == [p[metric] for p in alone.points]
    for a, b in zip(alone.points, together.points, strict=True):
        for metric in OWN:                                    # one held-out image may flip
            assert b[metric] == pytest.approx(a[metric], abs=1.5 / 48 if metric == OWN[0] else 1e-3)
    last = alone.points[-1]
    assert 0.2 < last["probe_accuracy"] <= 1 and 0 <= last["completion_error"] <= 1
    assert last["completion_nll"] < alone.points[0]["completion_nll"]   # it learns the bottom half


def test_other_tasks_log_no_task_metrics():
    result = train(TrainConfig(width=8, steps=5, evals=2, device="cpu"))
    assert not set(OWN) & set(result.points[-1])
