"""Planners that turn a fitted law into a decision: model shape, tree of steps, samples.

- :mod:`scalekit.planners._depth`: loss-optimal width and depth for a parameter budget.
- :mod:`scalekit.planners._cot`: the least-error tree of chain-of-thought steps.
- :mod:`scalekit.planners._inference_k`: how many inference-time samples, at which temperature,
  with the judge model of many samples (:mod:`~scalekit.planners._judge_model`,
  :mod:`~scalekit.planners._judge_selection`).

The planners that read measured data (``measured_laws``, ``task_law``, ``hparams``: the
optimal learning rate and batch size of a sweep) and the
data-constrained plan load lazily: they bring pandas and the curve store.
"""

from __future__ import annotations

from scalekit.planners._cot import plan_tree, step_error_from_law, tree_error
from scalekit.planners._depth import param_count_from_expression, plan_depth, width_for_depth
from scalekit.planners._inference_k import best_temperature, plan_samples, samples_or_data, simulate_samples
from scalekit.planners._judge_model import (JudgeModel, best_of_k_asymptote, error_many_samples,
                                            error_one_sample)
from scalekit.planners._judge_selection import monte_carlo_errors, quadrature_errors
from scalekit.lazy import lazy_names

__all__ = ["plan_tree", "step_error_from_law", "tree_error", "param_count_from_expression",
           "plan_depth", "width_for_depth", "best_temperature", "plan_samples",
           "samples_or_data", "JudgeModel", "best_of_k_asymptote", "error_many_samples",
           "error_one_sample", "monte_carlo_errors", "quadrature_errors", "simulate_samples"]

_LAZY = {
    "plan_data_constrained": "scalekit.planners._data_constrained",
    "fit_data_constrained": "scalekit.planners._data_constrained_fit",
    "fit_class_count_law": "scalekit.planners._measured_laws",
    "fit_depth_law": "scalekit.planners._measured_laws",
    "fit_inference_k_law": "scalekit.planners._measured_laws",
    "plan_depth_in_data": "scalekit.planners._measured_laws",
    "plan_tree_in_data": "scalekit.planners._measured_laws",
    "HparamsFit": "scalekit.planners._hparams_result",
    "fit_hparams": "scalekit.planners._hparams",
    "HPARAMS_SURFACES": "scalekit.planners._hparams",
    "HPARAMS_LAW_FORMS": "scalekit.planners._hparams",
    "recommend_hparams": "scalekit.planners._hparams",
    "score_on_grid": "scalekit.planners._hparams",
    "PUBLISHED_HPARAMS": "scalekit.planners._hparams_published",
    "TASKS": "scalekit.planners._task_law",
    "TaskLawResult": "scalekit.planners._task_law",
    "evaluate_holdout": "scalekit.planners._task_law",
    "predict_tasks": "scalekit.planners._task_law",
}
__all__ += list(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY)
