"""Flat against staged prediction on the hierarchical trainer confirms the planner's ranking.

A 64-class task whose class is six independent binary digits (``tied``) is
answered flat and through seven staged trees. The step errors ``eps(d)`` come
from the same trainer run flat on ``d`` classes (``log2 d`` digits) with the same
budget; the planner composes them, ``1 - prod (1 - eps(d_i))``, and its ranking of
the trees must agree with the measured one.

Tolerance: Kendall's tau between predicted and measured errors of the eight
shapes at least 0.7 (at most 4 of the 28 pairs in the wrong order), the
predicted best shape is the measured best, and the same holds for the
predictions of a ``class_count`` law fitted to the step errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from scalekit.fit import fit_law
from scalekit.laws import get_law
from scalekit.planners._cot import plan_tree, step_error_from_law, tree_error
from scalekit.train._config import TrainConfig
from scalekit.train._loop import train

SHAPES = ("64", "2x32", "4x16", "8x8", "2x4x8", "4x4x4", "2x2x4x4", "2x2x2x2x2x2")
TASK = {"degree": 2, "levels": 6, "dim": 32, "noise": 1.0, "shrink": 1.0, "tied": True}
BUDGET = {"task": "hierarchical", "device": "cpu", "width": 16, "depth": 1, "steps": 40,
          "batch_size": 32, "evals": 1, "eval_size": 4096, "lr": 3e-3}


def _final_error(options: dict) -> float:
    return train(TrainConfig(**BUDGET, options={**TASK, **options})).points[-1]["error"]


def _degrees(shape: str) -> list[int]:
    return [int(d) for d in shape.split("x")]


@pytest.fixture(scope="module")
def measured():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two shared cores: one thread is fastest
    try:
        return _measure()
    finally:
        torch.set_num_threads(threads)


def _measure():
    step = {2 ** levels: _final_error({"levels": levels}) for levels in range(1, 7)}
    staged = {shape: step[64] if shape == "64" else _final_error({"stages": shape}) for shape in SHAPES}
    return step, staged


def _agree(predicted: dict, staged: dict) -> None:
    tau = kendalltau([predicted[s] for s in SHAPES], [staged[s] for s in SHAPES]).statistic
    assert tau >= 0.7, (tau, predicted, staged)
    assert min(predicted, key=predicted.get) == min(staged, key=staged.get)


def test_measured_step_errors_rank_the_trees_as_measured(measured):
    step, staged = measured
    table = lambda d: np.array([step[int(x)] for x in np.atleast_1d(d)])  # noqa: E731
    predicted = {s: tree_error(_degrees(s), table) for s in SHAPES}
    _agree(predicted, staged)
    # the differences are clear: the best tree beats answering flat several times over
    assert min(staged.values()) < 0.25 * staged["64"]


def test_fitted_class_count_law_ranks_the_trees_as_measured(measured):
    step, staged = measured
    classes = np.array(sorted(step), dtype=float)
    fit = fit_law(get_law("class_count"), {"classes": classes},
                  np.maximum([step[int(k)] for k in classes], 1e-4))
    law = step_error_from_law(fit.values)
    predicted = {s: tree_error(_degrees(s), law) for s in SHAPES}
    _agree(predicted, staged)
    plan = plan_tree(64, fit.values)
    measured_best = min(staged, key=staged.get)
    # the exact plan over all integer trees is no worse than the best trained tree, as predicted
    assert plan.error <= predicted[measured_best] + 1e-12
    assert plan.critical_degree <= min(_degrees(measured_best)) + 1
