"""Every task draws each batch with torch on the run's device, from the stream's ``fresh``
generator — a fresh sample (``data=None``), the rows of a finite training set, the windows of
a corpus: a step copies nothing from the host."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scalekit.train import TrainConfig, train
from scalekit.train import _loop as train_loop
from scalekit.train.tasks.base import BatchStream

VECTOR_TASKS = {"teacher_student": {}, "residual_teacher": {"options": {"teacher_depth": 4}},
                "hierarchical": {"options": {"stages": "4x4"}}}
# a finite training set (row numbers) and a corpus (window starts)
INDEXED_TASKS = {"teacher_student data=64": {"task": "teacher_student", "data": 64},
                 "char_lm": {"task": "char_lm", "options": {"context": 8, "max_chars": 4000}}}
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


class HostCopy(AssertionError):
    pass


def _no_host_data(monkeypatch) -> None:
    """From now on, making a tensor from a NumPy array, making one on another device than the
    CPU from host values, or moving a CPU tensor to another device (bar 'meta'), raises."""
    def refuse(*args, **kwargs):
        raise HostCopy("a tensor was made from NumPy data inside the step loop")

    def guarded(make):
        def checked(data, *args, **kwargs):
            if isinstance(data, np.ndarray) or torch.device(kwargs.get("device") or "cpu").type != "cpu":
                raise HostCopy("a tensor was made from host data inside the step loop")
            return make(data, *args, **kwargs)
        return checked

    monkeypatch.setattr(torch, "from_numpy", refuse)
    for name in ("as_tensor", "tensor"):
        monkeypatch.setattr(torch, name, guarded(getattr(torch, name)))
    original_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        moved = original_to(self, *args, **kwargs)
        if self.device.type == "cpu" and moved.device.type not in ("cpu", "meta"):
            raise HostCopy(f"a CPU tensor was copied to {moved.device}")
        return moved

    monkeypatch.setattr(torch.Tensor, "to", to)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", list(VECTOR_TASKS) + list(INDEXED_TASKS))
def test_the_steps_of_a_run_make_no_tensor_from_host_data(task, device, monkeypatch):
    """The guard goes up once the data and model are built (the teacher is drawn with NumPy
    and moved once): a NumPy draw per step — of a fresh batch, or of the row numbers or
    window starts, as before this change — fails here."""
    build = train_loop.build_run

    def build_then_guard(config, device=None):
        built = build(config, device)
        _no_host_data(monkeypatch)
        return built

    monkeypatch.setattr(train_loop, "build_run", build_then_guard)
    config = TrainConfig(width=8, depth=1, steps=6, evals=2, eval_size=32,
                         batch_size=16, device=device, **_settings(task))
    result = train(config)
    assert len(result.points) == 2 and result.points[-1]["step"] == 6


def _settings(task: str) -> dict:
    return {"task": task, **VECTOR_TASKS[task]} if task in VECTOR_TASKS else INDEXED_TASKS[task]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", list(VECTOR_TASKS) + list(INDEXED_TASKS))
def test_a_batch_is_on_the_device_and_a_function_of_the_fresh_generator_alone(task, device):
    config = TrainConfig(width=8, depth=1, batch_size=16, device=device, **_settings(task))
    data, _, _ = train_loop.build_run(config, torch.device(device))
    stream = BatchStream([0, 1], device)
    start = stream.fresh.get_state()
    x, y = data.sample(stream, 16)
    assert {x.device.type, y.device.type} == {device} and len(x) == len(y) == 16
    assert not torch.equal(stream.fresh.get_state(), start)  # the draw used the fresh generator

    stream.fresh.set_state(start)
    again_x, again_y = data.sample(stream, 16)
    assert torch.equal(again_x, x) and torch.equal(again_y, y)
    other_x, _ = data.sample(stream, 16)
    assert not torch.equal(other_x, x)


def test_the_fresh_generator_is_seeded_by_the_data_seed_and_lives_on_the_device():
    first, again, other = (BatchStream([seed, 1]).fresh for seed in (0, 0, 1))
    assert first.device.type == "cpu"
    draws = [torch.randn(4, generator=g) for g in (first, again, other)]
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])
