"""The loop: learning happens, seeds reproduce, a killed run resumes to the same curve."""

from __future__ import annotations

import pytest
import torch

from scalekit.train._batched import train_batched
from scalekit.train._config import TrainConfig
from scalekit.train._loop import train

SMALL = {"teacher_student": {}, "hierarchical": {},
         "residual_teacher": {"depth": 3, "width": 16},
         "next_pixel": {"width": 32, "depth": 1, "batch_size": 16, "eval_size": 64},
         "char_lm": {"width": 32, "depth": 1, "batch_size": 16, "eval_size": 64,
                     "options": {"max_chars": 20000, "context": 32}}}


def _losses(result, key="loss"):
    return [p[key] for p in result.points]


@pytest.mark.parametrize("task", list(SMALL))
def test_loss_decreases_on_every_task(task):
    settings = {"width": 32, "steps": 120, "evals": 4, "lr": 3e-3, **SMALL[task]}
    losses = _losses(train(TrainConfig(task=task, device="cpu", **settings)))
    assert losses[-1] < 0.8 * losses[0]


def test_same_seed_gives_the_same_curve_and_another_seed_another():
    config = TrainConfig(width=16, steps=60, evals=4, dropout=0.1, device="cpu")
    first, again = train(config), train(config)
    other = train(config.replace(seed=1))
    for key in ("loss", "train_loss", "compute"):
        assert _losses(first, key) == _losses(again, key)
    assert _losses(first) != _losses(other)


class Killed(Exception):
    pass


def test_resume_after_a_kill_gives_the_uninterrupted_curve(tmp_path):
    config = TrainConfig(width=16, steps=80, evals=6, dropout=0.1, dropout_schedule="front_loaded",
                         lr_schedule="cosine", device="cpu")
    whole = train(config)
    seen = []

    def dies_at_the_fourth_point(name, attrs, points):
        seen.extend(points)
        if len(seen) == 4:
            raise Killed

    checkpoint = tmp_path / "run.pt"
    with pytest.raises(Killed):
        train(config, log=dies_at_the_fourth_point, checkpoint=checkpoint)
    resumed_log = []
    resumed = train(config, log=lambda name, attrs, points: resumed_log.extend(points),
                    checkpoint=checkpoint)
    strip = [{k: v for k, v in p.items() if k != "wall_time"} for p in whole.points]
    assert [{k: v for k, v in p.items() if k != "wall_time"} for p in resumed.points] == strip
    # the resumed run re-offers the checkpointed points (the store skips those it has) and then
    # the point lost with the kill, so nothing is missing
    assert [p["step"] for p in resumed_log] == [p["step"] for p in whole.points]


@pytest.mark.parametrize("task, dropout", [("teacher_student", 0.0), ("teacher_student", 0.2),
                                           ("residual_teacher", 0.0)])
def test_batched_runs_follow_their_sequential_curves(task, dropout):
    configs = [TrainConfig(task=task, width=16, steps=60, evals=3, device="cpu", seed=seed, lr=lr,
                           dropout=dropout, weight_decay=decay)
               for seed, lr, decay in [(0, 1e-3, 0.0), (1, 3e-3, 0.1), (2, 1e-2, 0.0)]]
    batched = train_batched(configs)
    for config, together in zip(configs, batched, strict=True):
        alone = train(config)
        assert together.name == alone.name and together.attrs["params"] == alone.attrs["params"]
        if dropout == 0.0:
            assert _losses(together) == pytest.approx(_losses(alone), rel=1e-4)
        else:  # other dropout masks: the same curve in distribution, not point by point
            assert _losses(together)[-1] == pytest.approx(_losses(alone)[-1], rel=0.25)
    assert len({tuple(_losses(r)) for r in batched}) == 3


@pytest.mark.parametrize("task, options", [("teacher_student", {}),
                                           ("char_lm", {"context": 8, "max_chars": 2000})])
def test_the_losses_of_stacked_outputs_are_each_models_own_loss(task, options):
    from scalekit.train.tasks import get_task

    config = TrainConfig(task=task, width=32, depth=1, eval_size=16, options=options)
    data = get_task(task).make_data(config)
    y = data.val[1]
    outputs = torch.randn(3, *y.shape, data.n_out) if data.loss == "cross_entropy" else \
        torch.randn(3, *y.shape)
    each = data.losses_of(outputs, y)
    assert each.tolist() == pytest.approx([float(data.loss_of(o, y)) for o in outputs], rel=1e-6)
