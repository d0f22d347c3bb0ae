"""The two-step task law (Bhagia et al. 2024) on a synthetic ladder with a known truth
and on OLMo's ladder, predicting the 7B-4T run from the 16 small runs alone.

Published figures (data/published/PROVENANCE.md): the paper predicts 7B-4T and 13B-5T
within 2 points of accuracy on MMLU, HellaSwag, PIQA and SocialIQA.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalekit import serialise
from scalekit.curves.readers._ladder import read_ladder
from scalekit.laws import get_law
from scalekit.planners._ladder_synthetic import STEP1_TRUTH, STEP2_TRUTH, synthetic_ladder, synthetic_run
from scalekit.planners._task_law import TASKS, TaskLawResult, predict_task, predict_tasks

PAPER_FOUR = ("mmlu_avg_test_5shot", "hellaswag_val_5shot", "piqa_val_5shot",
              "socialiqa_val_5shot")
SPEC = TASKS["hellaswag_val_5shot"]
COLUMNS = (SPEC.columns("bpb")[0][0], SPEC.columns("bpb")[1][0])
TARGET = (7e9, 4e12)


@pytest.fixture(scope="module")
def olmo(published_data):
    folder = published_data / "olmo_ladder"
    runs = read_ladder(sorted(folder.glob("*xC.csv")), folder / "final.json")
    (target,) = read_ladder([folder / "peteish7_eval_anneal.csv"], folder / "final.json")
    return runs, target


def _truth():
    x = get_law("chinchilla").predict({"params": [TARGET[0]], "tokens": [TARGET[1]]},
                                      STEP1_TRUTH)[0]
    return x, get_law("sigmoid").predict({"x": [x]}, STEP2_TRUTH)[0]


def test_noise_free_ladder_gives_the_true_chain():
    runs = synthetic_ladder(np.random.default_rng(0), columns=COLUMNS, run_noise=0.0,
                            checkpoint_noise=0.0, eval_noise=0.0)
    prediction = predict_task(runs, SPEC.name, *TARGET, bootstrap=0)
    x, accuracy = _truth()
    # smoothing over the last 5 of 30 checkpoints biases step 1 slightly (not the truth's D)
    assert prediction.intermediate == pytest.approx(x, rel=0.02)
    assert prediction.accuracy == pytest.approx(accuracy, abs=0.01)
    assert prediction.step2["values"]["k"] == pytest.approx(STEP2_TRUTH["k"], rel=0.05)


@pytest.mark.slow
def test_intervals_cover_a_new_runs_accuracy_on_synthetic_ladders():
    """95% intervals for a new run's accuracy: 12 ladders, expect ~11.4 covered; fewer
    than 9 has probability < 2% if the coverage were 95% (bench/bench_task_law.py
    measures it over 200 ladders)."""
    rng = np.random.default_rng(7)
    covered = 0
    for replicate in range(12):
        runs = synthetic_ladder(rng, columns=COLUMNS)
        target = synthetic_run(*TARGET, rng, name="target", columns=COLUMNS)
        p = predict_task(runs, SPEC.name, *TARGET, bootstrap=60, seed=replicate)
        actual = target.table[COLUMNS[1]].iloc[-1]
        covered += p.accuracy_interval[0] <= actual <= p.accuracy_interval[1]
        assert p.accuracy_interval[1] - p.accuracy_interval[0] < 0.2      # informative
    assert covered >= 9


def test_olmo_7b_point_predictions_within_two_points(olmo):
    runs, target = olmo
    result = predict_tasks(runs, target.params, 3.95e12, tasks=PAPER_FOUR, bootstrap=0,
                           actual=target)
    errors = {p.task: p.error for p in result.predictions}
    assert all(abs(e) <= 0.02 for e in errors.values()), errors


@pytest.mark.slow
def test_olmo_7b_intervals_hold_seven_of_eight(olmo):
    runs, target = olmo
    result = predict_tasks(runs, target.params, 3.95e12, bootstrap=200, actual=target)
    inside = [p.accuracy_interval[0] <= p.actual <= p.accuracy_interval[1]
              for p in result.predictions]
    assert len(inside) == 8 and sum(inside) >= 7


def test_result_round_trips_through_strict_json(olmo):
    runs, target = olmo
    result = predict_tasks(runs, target.params, 3.95e12, tasks=["piqa_val_5shot"],
                           bootstrap=20, actual=target)
    body = json.loads(serialise.dumps(result.to_dict()))              # strict JSON
    back = TaskLawResult.from_dict(body)
    assert back.to_dict() == result.to_dict()
    (prediction,) = body["predictions"]
    for key in ("task", "intermediate", "intermediate_interval", "accuracy",
                "accuracy_interval", "step1", "step2"):
        assert key in prediction
    assert result.summary().splitlines()[0].startswith("Task accuracy at N")
    assert "TaskLawResult(" in repr(result)


def test_step1_asymptote_diagnostics_and_intervals_on_olmo(olmo):
    """OLMo's ladder predicting 7B-4T: CommonsenseQA's step 1 puts E on its bound 0 (5.8e-19)
    and says so (`on_bound`); ARC-Easy's E (0.558) lies above the 7B run's task loss (0.533):
    `asymptote_above_data`. Step 1's intervals are the chain bootstrap's (finite; they were
    null from a singular covariance) in the JSON."""
    runs, target = olmo
    result = predict_tasks(runs, 6.89e9, 3.95e12, tasks=["csqa_val_5shot", "arc_easy_test_5shot"],
                           bootstrap=12, actual=target)
    found = {(d.code, d.message.split(" ")[0]) for d in result.diagnostics}
    assert ("on_bound", "csqa_val_5shot") in found
    assert ("asymptote_above_data", "arc_easy_test_5shot") in found
    arc = result.predictions[1]
    assert arc.step1["values"]["E"] > arc.actual_intermediate
    body = json.loads(serialise.dumps(result.to_dict()))
    for p in body["predictions"]:
        assert all(lo is not None and hi is not None and lo <= hi
                   for lo, hi in p["step1"]["ci"].values())
        assert p["step1"]["ci_method"].startswith("bootstrap over runs")
