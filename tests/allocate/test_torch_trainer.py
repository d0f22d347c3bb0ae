"""``run`` mode with a real bundled torch task (short CPU runs)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from scalekit.allocate._policies import LossPolicy  # noqa: E402
from scalekit.allocate._runner import run_allocation  # noqa: E402
from scalekit.train._allocation_trainer import TorchTaskTrainer  # noqa: E402
from scalekit.curves import CurveStore  # noqa: E402
from scalekit.train import TrainConfig, train  # noqa: E402


@pytest.mark.slow
def test_teacher_student_runs_are_allocated_and_match_uninterrupted_training(tmp_path):
    configs = [TrainConfig(task="teacher_student", width=w, depth=1, steps=60, batch_size=16,
                           evals=8, eval_size=128, device="cpu", seed=0) for w in (4, 8, 16)]
    trainer = TorchTaskTrainer(configs, str(tmp_path / "checkpoints"))
    exhaustive = sum(trainer.flops_per_step(c) * c.steps for c in configs)
    budget = 0.6 * exhaustive
    store = tmp_path / "store.db"
    result = run_allocation(store, "ts", trainer, LossPolicy(), budget=budget)
    again = run_allocation(store, "ts", trainer, LossPolicy(), budget=budget)
    assert again.trained == 0 and again.reused == result.trained
    assert result.allocation.spent <= budget
    with CurveStore(store) as opened:
        stored = opened.curves().frame
    steps_paid = {r: s for r, s in result.allocation.reached.items()}
    for config in configs:
        mine = stored[stored.run == config.name].sort_values("step")
        assert mine.step.max() <= steps_paid[config.name]  # nothing trained beyond its stop
        whole = [p for p in train(config).points if p["step"] <= mine.step.max()]
        assert [p["step"] for p in whole] == mine.step.tolist()
        assert np.allclose([p["loss"] for p in whole], mine.loss, rtol=1e-5)


@pytest.mark.slow
def test_candidates_carry_the_parameters_and_step_flops_training_counts(tmp_path):
    configs = [TrainConfig(task=task, width=8, depth=1, steps=2, batch_size=8, evals=1,
                           eval_size=16, device="cpu", seed=seed)
               for task in ("teacher_student", "char_lm") for seed in (0, 1)]
    trainer = TorchTaskTrainer(configs, str(tmp_path / "checkpoints"))
    candidates = trainer.candidates().set_index("run")
    for config in configs:
        attrs = train(config).attrs
        row = candidates.loc[config.name]
        # the size a run's curve carries, whether training or the allocator stored it
        assert row.params == attrs["params"] and row.max_resource == 2
        assert row.flops_per_unit == attrs["flops_per_step"] == trainer.flops_per_step(config)
