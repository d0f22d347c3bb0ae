"""Hierarchical task: the logged error rate, the staged (chain-of-thought) mode, tied digits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scalekit.errors import InputError
from scalekit.train._batched import train_batched
from scalekit.train._config import TrainConfig
from scalekit.train._loop import train
from scalekit.train.tasks import hierarchical
from scalekit.train.tasks.hierarchical import leaf_paths, parse_stages, step_inputs

SMALL = {"task": "hierarchical", "device": "cpu", "width": 16, "depth": 1, "steps": 40,
         "batch_size": 32, "evals": 3, "eval_size": 512}
TASK = {"degree": 2, "levels": 4, "dim": 8, "noise": 1.0}


def _final_model(config: TrainConfig, tmp_path):
    """The trained model, read back from the loop's checkpoint."""
    checkpoint = tmp_path / "run.pt"
    result = train(config, checkpoint=checkpoint)
    data = hierarchical.make_data(config)
    model = hierarchical.make_model(config, data)
    model.load_state_dict(torch.load(checkpoint, weights_only=True)["model"])
    return result, data, model.eval()


def test_every_point_logs_an_error_rate_through_the_log():
    logged = []
    result = train(TrainConfig(**SMALL, options=TASK), log=lambda name, attrs, points: logged.extend(points))
    assert logged == result.points
    errors = [p["error"] for p in result.points]
    assert all(0.0 <= e <= 1.0 for e in errors)
    assert errors[-1] < errors[0]
    assert "error" in result.frame()


def test_flat_error_is_the_rate_of_wrong_arg_max_on_the_validation_set(tmp_path):
    config = TrainConfig(**SMALL, options=TASK)
    result, data, model = _final_model(config, tmp_path)
    x, y = data.val
    with torch.no_grad():
        wrong = sum(int(model(x[i:i + 1]).argmax()) != int(y[i]) for i in range(len(y)))
    assert result.points[-1]["error"] == pytest.approx(wrong / len(y), abs=1e-12)


def test_staged_error_is_the_error_of_the_chain_run_on_its_own_answers(tmp_path):
    config = TrainConfig(**SMALL, options={**TASK, "stages": "4x2x2"})
    result, data, model = _final_model(config, tmp_path)
    x, digits = data.val
    dim = TASK["dim"]
    features = x[:, 0, :dim]
    answers = torch.zeros(len(x), 0, dtype=torch.long)
    with torch.no_grad():
        for step, _slot in enumerate([0, 4, 6]):
            inputs = torch.zeros(len(x), 3, x.shape[2])
            inputs[:, :, :dim] = features[:, None]
            for before, before_slot in enumerate([0, 4][:step]):
                inputs[torch.arange(len(x)), step, dim + before_slot + answers[:, before]] = 1.0
            answer = model(inputs)[:, step].argmax(dim=1)
            answers = torch.cat([answers, answer[:, None]], dim=1)
    chain_error = float((answers != digits).any(dim=1).float().mean())
    assert result.points[-1]["error"] == pytest.approx(chain_error, abs=1e-12)
    assert int(answers.max()) == 3 and int(answers[:, 1:].max()) == 1  # absent options never chosen


def test_step_inputs_spell_the_label_in_mixed_radix_with_one_hot_earlier_digits():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 24, 50)
    x = rng.standard_normal((50, 3))
    inputs, digits = (t.numpy() for t in step_inputs(torch.from_numpy(x), torch.from_numpy(labels),
                                                      (2, 3, 4)))
    assert np.array_equal(digits[:, 0] * 12 + digits[:, 1] * 4 + digits[:, 2], labels)
    assert np.all(digits < np.array([2, 3, 4]))
    assert np.array_equal(inputs[:, :, :3], np.repeat(x[:, None], 3, axis=1))
    assert np.all(inputs[:, 0, 3:] == 0)
    assert np.array_equal(inputs[:, 1, 3:5].argmax(1), digits[:, 0]) and np.all(inputs[:, 1, 5:] == 0)
    assert np.array_equal(inputs[:, 2, 5:8].argmax(1), digits[:, 1])
    assert np.all(inputs[:, :, 3:].sum(axis=2) == [0, 1, 2])


def test_stages_are_parsed_from_strings_and_lists_and_must_multiply_to_the_classes():
    assert parse_stages("8x8", 64) == parse_stages([8, 8], 64) == (8, 8)
    assert parse_stages(None, 64) == (64,)
    for bad in ("8x4", "8xa", [1, 64]):
        with pytest.raises(InputError, match="stages"):
            parse_stages(bad, 64)
    with pytest.raises(InputError, match="product is the number of classes, 16"):
        train(TrainConfig(**SMALL, options={**TASK, "stages": "2x2"}))


def test_tied_prototypes_depend_on_the_level_and_the_digit_only():
    tree, tied = leaf_paths(3, 2), leaf_paths(3, 2, tied=True)
    assert len(np.unique(tree)) == 3 + 9 and len(np.unique(tied)) == 3 + 3
    leaves = np.arange(9)
    assert np.array_equal(tied[:, 0], leaves // 3) and np.array_equal(tied[:, 1], 3 + leaves % 3)


def test_staged_steps_learn_and_the_flat_run_is_one_step():
    flat = train(TrainConfig(**SMALL, options=TASK))
    one_step = train(TrainConfig(**SMALL, options={**TASK, "stages": [16]}))
    assert [p["error"] for p in flat.points] == [p["error"] for p in one_step.points]
    easy = {**TASK, "noise": 0.3, "shrink": 1.0, "tied": True}
    staged = train(TrainConfig(**SMALL, options={**easy, "stages": "2x2x2x2"}))
    assert staged.attrs["stage_count"] == 4 and staged.attrs["stages"] == "2x2x2x2"
    assert staged.points[-1]["error"] < 0.5 * staged.points[0]["error"]


@pytest.mark.parametrize("stages", [None, "4x2x2"])
def test_batched_runs_log_the_error_of_their_sequential_runs(stages):
    configs = [TrainConfig(**SMALL, seed=seed, lr=lr, options={**TASK, "stages": stages})
               for seed, lr in [(0, 3e-3), (1, 1e-2)]]
    for config, together in zip(configs, train_batched(configs), strict=True):
        alone = train(config)
        assert [p["error"] for p in together.points] == pytest.approx(
            [p["error"] for p in alone.points], abs=3 / SMALL["eval_size"])
