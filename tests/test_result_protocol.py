"""The result protocol: to_dict/from_dict round trips, fixed-section summaries, one-line reprs,
HTML for notebooks, the JSON envelope around to_dict, and FitResult.to_lmfit against lmfit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalekit.fit import FitResult, fit_law
from scalekit.laws import get_law
from scalekit.serialise import dumps, envelope

LAW = get_law("saturating_power")
TRUTH = np.array([0.5, 3.0, 0.5])


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(0)
    X = {"x": np.exp(rng.uniform(0.0, np.log(1e4), 60))}
    return X, LAW.predict(X, TRUTH) * np.exp(rng.normal(0.0, 0.02, 60))


@pytest.fixture(scope="module")
def fit(points):
    return fit_law(LAW, *points, loss="squared")


def _sections(text: str) -> list[str]:
    return [line.strip("[]") for line in text.splitlines() if line.startswith("[[")]


def test_fit_result_round_trips_through_strict_json(fit, points):
    back = FitResult.from_dict(json.loads(dumps(fit.to_dict())))
    assert back.values == fit.values and back.stats == fit.stats
    np.testing.assert_array_equal(back.predict(points[0]), fit.predict(points[0]))


def test_fit_result_summary_repr_and_html(fit):
    assert _sections(fit.summary()) == ["Fit statistics", "Parameters"]
    assert fit.summary().splitlines()[0] == f"Fit of saturating_power: {LAW.formula}"
    line = repr(fit)
    assert "\n" not in line and len(line) < 100
    assert line.startswith("FitResult(law=saturating_power, objective=") and "n_points=60" in line
    html = fit._repr_html_()
    assert html.startswith("<div>") and "<h4" in html and "alpha" in html


def test_envelope_wraps_to_dict_and_lifts_the_diagnostics(fit):
    wrapped = envelope("fit", fit, input_sha256="abc", seed=3, settings={"law": "x"})
    assert [*wrapped][:6] == ["format", "version", "input_sha256", "seed", "settings",
                              "diagnostics"]
    assert wrapped["params"] == fit.to_dict()["params"] and wrapped["seed"] == 3
    json.loads(dumps(wrapped))


def test_to_lmfit_hands_lmfit_the_optimum_it_finds_itself(fit, points):
    lmfit = pytest.importorskip("lmfit")
    X, y = points

    def residual(params):
        theta = np.array([params[name].value for name in LAW.param_names])
        return np.log(LAW.predict(X, theta)) - np.log(y)

    params = fit.to_lmfit()
    assert list(params) == list(LAW.param_names)
    assert params["E"].min == 0.0 and params["E"].stderr == fit.stderr["E"]
    # lmfit's own Levenberg-Marquardt, started from our optimum, finds nothing lower ...
    polished = lmfit.minimize(residual, params, method="leastsq")
    assert polished.chisqr >= 2 * fit.stats["objective"] * (1 - 1e-9)
    # ... and, started far away, reaches the same parameters.
    far = fit.to_lmfit()
    for name, value in zip(LAW.param_names, (0.1, 10.0, 1.0), strict=True):
        far[name].value = value
    found = lmfit.minimize(residual, far, method="leastsq")
    for name in LAW.param_names:
        assert found.params[name].value == pytest.approx(fit.values[name], rel=1e-5)


def _planner_results():
    from scalekit.laws._class_count import class_count_error
    from scalekit.planners._cot import plan_tree
    from scalekit.planners._depth import plan_depth
    from scalekit.planners._inference_k import plan_samples, simulate_samples
    from scalekit.planners._judge_model import JudgeModel

    depth_law = {"c_m": 300.0, "alpha_m": 1.0, "c_l": 2.0, "alpha_l": 1.2, "c_D": 500.0,
                 "alpha_D": 0.3, "L0": 1.7}
    depth = plan_depth(depth_law, 1e9, 1e10, shape=(2000.0, 20.0))
    tree = plan_tree(64, lambda d: class_count_error(d, 0.01, 1.0))
    samples = plan_samples({"E": 0.01, "A": 0.5, "a": 2.0, "B": 0.0, "b": 0.5}, 1e-5)
    simulation = simulate_samples(JudgeModel(dim=8, n_train=16, n_test=4), k_max=8, repeats=20)
    return [(depth, ["Optimum", "Regime", "Your shape"], "DepthPlan(params_budget="),
            (tree, ["Best tree", "Bounds", "Least error by depth"], "TreePlan(classes=64"),
            (samples, ["Plan", "Ignoring cost"], "SamplesPlan(k="),
            (simulation, ["Least error", "Closed forms",
                          "Error by k (quadrature, Monte Carlo ± stderr)"],
             "SampleSimulation(temperature=0")]


@pytest.mark.parametrize("index", range(4))
def test_planner_results_follow_the_protocol(index):
    result, sections, start = _planner_results()[index]
    back = type(result).from_dict(json.loads(dumps(result.to_dict())))
    assert back == result
    assert _sections(result.summary()) == sections
    assert repr(result).startswith(start) and "\n" not in repr(result)
    assert "<table>" in result._repr_html_()


def test_allocation_results_follow_the_protocol(tmp_path):
    import pandas as pd

    from scalekit.allocate._next_actions import Plan, plan_next
    from scalekit.allocate._policies import LossPolicy
    from scalekit.allocate._replay import ReplayResult, replay
    from scalekit.allocate._runner import AllocationRunResult, run_allocation
    from scalekit.allocate._sweep import sweep_from_frame
    from scalekit.allocate._synthetic import early_leader_frame
    from scalekit.allocate._toy import SyntheticTrainer

    frame = early_leader_frame(seed=5, sizes=9, variants=1, points=30)
    sweep = sweep_from_frame(frame)
    replayed = replay(sweep, policies=["loss", "uniform"], budgets=[0.3], seeds=2,
                      frontier=False, completion=None)
    back = ReplayResult.from_dict(json.loads(dumps(replayed.to_dict())))
    pd.testing.assert_frame_equal(back.rows, replayed.rows, check_dtype=False)
    pd.testing.assert_frame_equal(back.averages, replayed.averages, check_dtype=False)
    assert back.exhaustive_compute == replayed.exhaustive_compute
    assert _sections(replayed.summary()) == ["Budget 0.3"]
    assert repr(replayed) == "ReplayResult(policies=2, budgets=1, rows=4)"

    plan = plan_next(sweep_from_frame(frame[frame.step <= 3], max_resource=sweep.max_resource),
                     LossPolicy(), 0.2 * sweep.total_compute())
    back = Plan.from_dict(json.loads(dumps(plan.to_dict())))
    assert back.to_dict() == json.loads(dumps(plan.to_dict())) and back.bracket == plan.bracket
    assert _sections(plan.summary()) == ["Actions", "Compute"]
    assert repr(plan).startswith(f"Plan(rung={plan.rung}, actions={len(plan.actions)}")

    trainer = SyntheticTrainer(seed=0, sizes=4, variants=1, max_compute=1e18, points=6)
    ran = run_allocation(tmp_path / "s.db", "toy", trainer, LossPolicy(), budget=1e18)
    back = AllocationRunResult.from_dict(json.loads(dumps(ran.to_dict())))
    assert back.bracket == ran.bracket and back.trained == ran.trained
    assert back.allocation.to_dict() == json.loads(dumps(ran.allocation.to_dict()))
    np.testing.assert_array_equal(*(next(iter(r.allocation.observed.values())).loss
                                    for r in (back, ran)))
    assert _sections(ran.summary())[:3] == ["Budget", "Bracket", "This invocation"]
    assert repr(ran).startswith("AllocationRunResult(spent=")


def test_isoflop_report_follows_the_protocol():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "isoflop"))
    from isoflop_synthetic import sweep

    from scalekit.isoflop._analysis import IsoFLOPReport, run_isoflop

    settings = {"ci_level": 0.9, "convention": "6ND", "flops_per_param_token": 6.0,
                "bootstrap": 20, "profile": "params", "figures": 2, "budgets": None,
                "budget_tolerance": 0.1, "window": "auto", "target_compute": None}
    report = run_isoflop(sweep(seed=1), ("2", "3"), settings, seed=0, source=None)
    back = IsoFLOPReport.from_dict(json.loads(dumps(report.to_dict())))
    assert back.to_dict() == json.loads(dumps(report.to_dict()))
    assert list(back.fitted) == list(report.fitted) == ["2", "3"]
    for key, model in report.fitted.items():  # each approach comes back as its estimator
        assert type(back.fitted[key]) is type(model)
        assert back.fitted[key].params_law_.exponent == model.params_law_.exponent
    sections = _sections(report.summary())
    assert sections[:2] == ["FLOPs", "Compute-optimal allocation"]
    assert repr(report) == "IsoFLOPReport(what=IsoFLOP analysis, approaches=2)"


def test_a_forecast_follows_the_protocol():
    import pandas as pd

    from scalekit.surrogates._forecast import Forecast, forecast_frame

    steps = np.arange(1, 41)
    frame = pd.concat([pd.DataFrame({"run": name, "step": steps,
                                     "loss": 2.0 + scale * steps ** -0.5})
                       for name, scale in (("a", 3.0), ("b", 5.0))], ignore_index=True)
    result = forecast_frame(frame, to=400, method="satpow")
    back = Forecast.from_dict(json.loads(dumps(result.to_dict())))
    pd.testing.assert_frame_equal(back.table, result.table, check_dtype=False)
    assert list(result.final["run"]) == ["a", "b"] and (result.final["x"] == 400).all()
    assert _sections(result.summary()) == ["Final forecasts"]
    assert repr(result) == "Forecast(method=satpow, runs=2, to=400)"
    # the exact curve is E + A x^-0.5: the median at 400 lies near it
    assert result.final["q0.5"].to_numpy() == pytest.approx([2.15, 2.25], abs=0.02)


def _known_curve_tasks():
    """Curves ``2 + s·x^-0.5`` cut at x = 20 and forecast to x = 40, in two groups."""
    from scalekit.surrogates._evaluate import Task

    x, target = np.arange(1.0, 21.0), np.arange(21.0, 41.0)
    return [Task(f"r{s}", x, 2.0 + s * x ** -0.5, target, 2.0 + s * target ** -0.5,
                 group="A" if s < 4 else "B") for s in (2.0, 3.0, 4.0, 5.0)]


def _exact(tasks):
    """The true curve as the median, ±10% intervals: every truth inside, no error."""
    from scalekit.surrogates._evaluate import QUANTILES

    spread = np.where(QUANTILES < 0.5, 0.9, np.where(QUANTILES > 0.5, 1.1, 1.0))
    return [t.y_target[:, None] * spread[None, :] for t in tasks]


def _last(tasks):
    """The last observed loss, everywhere."""
    from scalekit.surrogates._evaluate import QUANTILES

    return [np.full((t.x_target.size, QUANTILES.size), t.y[-1]) for t in tasks]


@pytest.mark.parametrize("kind", ["evaluation", "benchmark"])
def test_forecast_scores_follow_the_protocol(kind):
    import pandas as pd

    from scalekit.surrogates import ForecastScores
    from scalekit.surrogates._evaluate import evaluate, holdout_benchmark

    tasks = _known_curve_tasks()
    methods = {"exact": _exact, "last": _last}
    if kind == "evaluation":
        scores = evaluate(tasks, methods, by=lambda t: t.group)
        column, error = "subset", "final_log_err"
        # the last observed loss misses the final point by log((2 + s/sqrt 20) / (2 + s/sqrt 40))
        s = np.array([2.0, 3.0, 4.0, 5.0])
        miss = np.mean(np.log((2 + s / np.sqrt(20)) / (2 + s / np.sqrt(40))))
    else:
        scores = holdout_benchmark(tasks, methods, reference="last")
        column, error = "group", "rmse_log"
    table = scores.table.set_index([column, "method"])
    assert table[error].xs("exact", level="method").max() == pytest.approx(0.0, abs=1e-12)
    assert (table["cover80"].xs("exact", level="method") == 1.0).all()
    if kind == "evaluation":
        assert table.loc[("all", "last"), error] == pytest.approx(miss, rel=1e-12)
    back = ForecastScores.from_dict(json.loads(dumps(scores.to_dict())))
    pd.testing.assert_frame_equal(back.table, scores.table, check_exact=True)
    assert (back.kind, back.reference) == (scores.kind, scores.reference) == (
        kind, None if kind == "evaluation" else "last")
    labels = ["all", "A", "B"] if kind == "evaluation" else ["A", "B"]
    assert _sections(scores.summary()) == [f"{column.capitalize()} {label}" for label in labels]
    assert back.summary() == scores.summary()
    line = repr(scores)
    assert line == f"ForecastScores(kind={kind}, methods=2, {column}s={len(labels)})"
    assert "\n" not in line and len(line) < 100


@pytest.fixture(scope="module")
def chinchilla_fit():
    law = get_law("chinchilla")
    truth = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
    n, d = (a.ravel() for a in np.meshgrid(np.geomspace(1e7, 1e9, 6), np.geomspace(1e9, 1e11, 6)))
    X = {"params": n, "tokens": d}
    y = law.predict(X, np.array([truth[p] for p in law.param_names]))
    return fit_law(law, X, y * np.exp(np.random.default_rng(1).normal(0, 0.002, n.size)),
                   loss="squared")


def test_compute_plans_follow_the_protocol_and_read_as_their_mapping(chinchilla_fit):
    from scalekit.fit import plan_for_compute
    from scalekit.fit._plans import ComputePlan
    from scalekit.isoflop import compare_allocation, plan_for_loss

    plans = {"compute": plan_for_compute(chinchilla_fit, 1e22),
             "loss": plan_for_loss(chinchilla_fit, 2.2),
             "comparison": compare_allocation(chinchilla_fit, 280e9, 300e9)}
    for kind, plan in plans.items():
        back = ComputePlan.from_dict(json.loads(dumps(plan.to_dict())))
        assert back == plan and back.kind == kind
        assert set(plan) == set(plan.values) | {"diagnostics"}
        assert dict(plan)["compute"] == plan.values["compute"] > 0
        sections = _sections(plan.summary())
        assert sections[0] == "Plan" and "\n" not in repr(plan)
        assert repr(plan).startswith(f"ComputePlan(kind={kind}")
    by_compute = plans["compute"]
    # the budget (and N*) lie beyond the fitted runs (6·1e9·1e11 = 6e20 FLOPs): said, and kept
    codes = [d.code for d in by_compute["diagnostics"]]
    assert codes and set(codes) == {"extrapolation"}
    assert ComputePlan.from_dict(by_compute.to_dict()).diagnostics == by_compute.diagnostics
    assert _sections(by_compute.summary()) == ["Plan", "Intervals", "Diagnostics"]
    # C = 6 N D holds for the plan's own N*, D*
    assert 6 * by_compute["params"] * by_compute["tokens"] == pytest.approx(1e22, rel=1e-9)
