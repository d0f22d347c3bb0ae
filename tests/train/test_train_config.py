"""Settings: schedules against their closed forms, checks, and the lazy import of torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from scalekit.errors import InputError
from scalekit.train._config import TrainConfig
from scalekit.train._sweep import SweepSpec


@pytest.mark.parametrize("steps", [1, 7, 100])
def test_front_loaded_dropout_has_the_constant_average(steps):
    front = TrainConfig(steps=steps, dropout=0.2, dropout_schedule="front_loaded")
    rates = np.array([front.dropout_at(t) for t in range(steps)])
    assert rates.mean() == pytest.approx(0.2)
    assert np.all(np.diff(rates) < 0) and rates.min() >= 0 and rates.max() <= 0.4


def test_cosine_schedule_warms_up_then_decays_to_a_tenth():
    config = TrainConfig(steps=1000, lr=1e-2, lr_schedule="cosine")
    lrs = np.array([config.lr_at(t) for t in range(1000)])
    assert lrs.argmax() == 19 and lrs.max() == pytest.approx(1e-2)
    assert lrs[-1] == pytest.approx(1e-3, rel=1e-3)
    assert np.all(np.diff(lrs[20:]) <= 0)


def test_eval_steps_are_increasing_and_end_at_the_last_step():
    steps = TrainConfig(steps=300, evals=10).eval_steps()
    assert steps[0] == 1 and steps[-1] == 300 and np.all(np.diff(steps) > 0)


@pytest.mark.parametrize("changes, message", [
    ({"width": 0}, "The value of `width` is 0, but must be >= 1."),
    ({"dropout": 0.6, "dropout_schedule": "front_loaded"}, "`dropout` is 0.6, but must be <= 0.5"),
    ({"lr_schedule": "linear"}, "`lr_schedule` is 'linear', but must be one of"),
])
def test_bad_settings_name_the_setting(changes, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TrainConfig(**changes)


def test_grid_is_the_full_product_with_distinct_names():
    spec = SweepSpec(base=TrainConfig(steps=10), widths=[8, 16, 32], seeds=[0, 1],
                     dropout_schedules=["constant", "front_loaded"], dropouts=[0.1])
    configs = spec.configs()
    assert len(configs) == 12 and len({c.name for c in configs}) == 12
    assert {(c.width, c.seed) for c in configs} == {(w, s) for w in (8, 16, 32) for s in (0, 1)}


def test_evaluation_settings_give_other_names_so_a_rerun_does_not_reuse_old_points():
    base = TrainConfig(steps=10)
    names = {base.name, base.replace(evals=30).name, base.replace(eval_size=256).name,
             base.replace(evals=30, eval_size=256).name}
    assert len(names) == 4
    assert base.replace(evals=12, eval_size=1024).name == base.name  # the defaults


def test_importing_the_package_and_building_a_sweep_does_not_import_torch():
    code = ("import sys\nimport scalekit.train\nfrom scalekit.train import SweepSpec, TrainConfig\n"
            "SweepSpec(base=TrainConfig(), widths=[4, 8]).configs()\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
