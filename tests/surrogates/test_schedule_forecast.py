"""Schedule-aware forecasts: the refusal past a run's end, and ``--method multipower`` end to
end on curves drawn from a known multi-power law (one file per run, each with its lr column)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.laws._multipower import ScheduleTerms, multipower_value_and_jacobian
from multipower_runs import curve, schedule_runs
from scalekit_cli.app import main

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_curves.csv"
TRUTH = (2.0, 0.6, 0.5, 300.0, 2.0, 0.6, 0.6)
SPECS = {"cos": "cosine:warmup=100,peak=1e-3,final=1e-4,total=3000",
         "const": "constant:warmup=100,peak=1e-3,total=3000",
         "two": "two_stage:warmup=100,peak=1e-3,second=3e-4,switch=1500,total=2500",
         "wsd": "wsd:warmup=100,peak=1e-3,final=1e-4,decay=2000,total=3000"}


def _curve(spec, steps):
    return curve(spec, steps, TRUTH)


@pytest.fixture
def runs(tmp_path):
    return schedule_runs(tmp_path, SPECS, TRUTH)


def test_forecast_past_the_schedule_end_is_refused(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["forecast", str(SAMPLE), "--to", "4000", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "schedule ends before step 4000" in err and "finished" in err
    assert len(err.strip().splitlines()[-1]) <= 200 and not out.exists()


def test_multipower_evaluates_held_out_runs_and_predicts_a_spec(runs, tmp_path, capsys):
    out = tmp_path / "mp.json"
    spec = "cosine:warmup=100,peak=1e-3,final=1e-4,total=4000"
    assert main(["forecast", *runs, "--method", "multipower", "--fit-on", "cos,const,two",
                 "--evaluate", "--predict-schedule", spec, "--json", str(out)]) == 0, \
        capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.forecast/1"
    assert [r["run"] for r in report["runs"]] == ["wsd"]
    wsd = report["runs"][0]
    assert set(wsd) >= {"run", "mean_rel_error", "worst_rel_error", "r2"}
    assert wsd["worst_rel_error"] < 1e-3 and wsd["r2"] > 0.999   # lr read every 50 steps
    assert report["params"]["alpha"] == pytest.approx(0.5, rel=0.1)
    predicted = [row for row in report["forecasts"] if row["schedule"] == spec]
    final = predicted[-1]
    assert final["step"] == 4000
    assert final["q0.5"] == pytest.approx(_curve(spec, np.array([3999]))[0], rel=2e-3)
    assert final["q0.025"] <= final["q0.5"] <= final["q0.975"]
    assert report["stats"]["shape_prior"] == 1.0 and report["stats"]["prior_penalty"] >= 0
    free = tmp_path / "free.json"
    assert main(["forecast", *runs, "--method", "multipower", "--fit-on", "cos,const,two",
                 "--evaluate", "--free-shape", "--json", str(free)]) == 0
    stats = json.loads(free.read_text())["stats"]
    assert stats["shape_prior"] is None and stats["prior_penalty"] == 0.0


@pytest.mark.parametrize("args, words", [
    (["--method", "multipower", "--evaluate"], "--fit-on"),
    (["--method", "multipower", "--fit-on", "cos"], "--predict-schedule"),
    (["--method", "multipower", "--fit-on", "nope", "--evaluate"], "--fit-on"),
    (["--method", "multipower", "--fit-on", "cos", "--predict-schedule", "tri:x=1"],
     "--predict-schedule"),
    (["--fit-on", "cos", "--to", "10"], "go with --method multipower"),
    (["--free-shape", "--to", "10"], "go with --method multipower")])
def test_multipower_refusals_name_the_option(runs, args, words, capsys):
    assert main(["forecast", *runs[:1], *args]) == 2
    assert words in capsys.readouterr().err


def test_schedule_search_finds_the_best_wsd_of_its_grid_and_beats_cosine(runs, tmp_path,
                                                                        capsys):
    fit_json = tmp_path / "mp.json"
    assert main(["forecast", *runs, "--method", "multipower", "--fit-on", "cos,const,two",
                 "--evaluate", "--json", str(fit_json), "--quiet"]) == 0
    out, png = tmp_path / "search.json", tmp_path / "search.png"
    assert main(["plan", "--schedule-search", "--from", str(fit_json), "--total-steps", "3000",
                 "--json", str(out), "--plot", str(png)]) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    # an independent check: the truth's loss at step 3000 of the chosen schedule and of
    # every candidate, recomputed from the spec
    truth_best = _curve(report["best"], np.array([3000]))[0]
    truth_all = [_curve(row["spec"], np.array([3000]))[0] for row in report["candidates"]]
    assert truth_best == pytest.approx(min(truth_all), abs=5e-4)   # of a gain of 0.07
    assert report["best_loss"] == pytest.approx(truth_best, rel=1e-3)
    truth_cos = _curve(report["baseline"], np.array([3000]))[0]
    assert report["gain"] == pytest.approx(truth_cos - truth_best, abs=5e-4)
    assert report["gain"] > 0 and report["gain_interval"][0] <= report["gain"]
    assert png.stat().st_size > 10_000


def test_schedule_search_refusals(tmp_path, capsys):
    assert main(["plan", "--schedule-search", "--total-steps", "10", "--from",
                 str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["plan", "--schedule-search", "--from", str(bad)]) == 2
    assert "--total-steps" in capsys.readouterr().err
    assert main(["plan", "--schedule-search", "--from", str(bad), "--total-steps", "10"]) == 2
    assert "multipower" in capsys.readouterr().err


def test_results_follow_the_protocol(runs):
    from scalekit.curves.readers import read_curves
    from scalekit.serialise import dumps
    from scalekit.surrogates._schedule_forecast import ScheduleForecast, multipower_forecast
    from scalekit.surrogates._schedule_search import ScheduleSearch, search_schedule

    frame = pd.concat([read_curves(path).frame for path in runs], ignore_index=True)
    result = multipower_forecast(frame, fit_on=["cos", "const", "two"], evaluate=True)
    back = ScheduleForecast.from_dict(json.loads(dumps(result.to_dict())))
    assert back.to_dict() == json.loads(dumps(result.to_dict()))
    assert result.summary().splitlines()[0].startswith("Multi-power law fitted on cos")
    assert repr(result) == "ScheduleForecast(fit_on=3, scored=1, schedules=1)"
    search = search_schedule(result.params, total_steps=3000, warmup=100, peak=1e-3,
                             family="cosine", covariance=result.stats["covariance"])
    again = ScheduleSearch.from_dict(json.loads(dumps(search.to_dict())))
    assert again.to_dict() == json.loads(dumps(search.to_dict()))
    assert "[[Answer]]" in search.summary() and search.best.startswith("cosine:")


def test_total_steps_sets_every_runs_end(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["forecast", str(SAMPLE), "--to", "4000", "--total-steps", "5000", "--method",
                 "pow3", "--quiet", "--json", str(out)]) == 0, capsys.readouterr().err
    assert len({row["run"] for row in json.loads(out.read_text())["forecasts"]}) == 24
    assert main(["forecast", str(SAMPLE), "--to", "600", "--total-steps", "500", "--method",
                 "pow3", "--quiet"]) == 2
    assert "ends before step 600" in capsys.readouterr().err


def test_free_schedule_without_a_loss_drop_is_the_constant_peak():
    # B ~ 0: the law is L0 + A S1^-alpha, least with the largest area, i.e. no decay at all
    from scalekit.surrogates._schedule_search import search_schedule

    params = dict(zip(("L0", "A", "alpha", "B", "C", "beta", "gamma"),
                      (2.0, 0.6, 0.5, 1e-9, 2.0, 0.6, 0.6), strict=True))
    search = search_schedule(params, total_steps=3000, warmup=100, peak=1e-3, family="free")
    rates = np.asarray(search.rates)
    np.testing.assert_allclose(rates[100:], 1e-3, rtol=1e-9)
    area = np.linspace(0, 1e-3, 100).sum() + 1e-3 * 2901      # steps 0 … 3000
    assert search.best_loss == pytest.approx(2.0 + 0.6 * area ** -0.5, rel=1e-9)


@pytest.mark.slow
def test_free_schedule_is_non_increasing_and_no_worse_than_the_best_wsd():
    from scalekit.surrogates._schedule_search import search_schedule

    params = dict(zip(("L0", "A", "alpha", "B", "C", "beta", "gamma"), TRUTH, strict=True))
    wsd = search_schedule(params, total_steps=3000, warmup=100, peak=1e-3, family="wsd")
    free = search_schedule(params, total_steps=3000, warmup=100, peak=1e-3, family="free")
    rates = free.best_schedule().rates
    assert np.all(np.diff(rates[100:]) <= 0) and rates[100:].max() <= 1e-3
    assert free.best_loss < wsd.best_loss - 1e-4 and free.gain > wsd.gain
    # its predicted final loss, recomputed from its rates by the law
    assert free.best_loss == pytest.approx(_curve_of(rates, 3000), rel=1e-12)
    from scalekit.serialise import dumps
    from scalekit.surrogates._schedule_search import ScheduleSearch

    back = ScheduleSearch.from_dict(json.loads(dumps(free.to_dict())))
    np.testing.assert_array_equal(back.best_schedule().rates, rates)


def _curve_of(rates, step):
    rates = np.append(rates, rates[-1])
    return multipower_value_and_jacobian(ScheduleTerms(rates, np.array([step])), TRUTH,
                                         jacobian=False)[0]


def test_a_forecast_past_the_fitted_area_says_so(runs):
    from scalekit.curves.readers import read_curves
    from scalekit.surrogates._schedule_forecast import multipower_forecast

    frame = pd.concat([read_curves(path).frame for path in runs], ignore_index=True)
    longer = "constant:warmup=100,peak=1e-3,total=9000"
    result = multipower_forecast(frame, fit_on=["cos", "const", "two"],
                                 predict_schedule=[longer, SPECS["wsd"]])
    notes = [d for d in result.diagnostics if d.code == "extrapolation"]
    assert [d.run for d in notes] == [longer]
    # S1 at step 9000 of the spec (warm-up 0 … 1e-3 over steps 0 … 99) over S1 at the const
    # run's last logged step 2950 (its lr column read as a warm-up 1e-5 k over k = 0 … 100)
    spec_area = np.linspace(0, 1e-3, 100).sum() + 1e-3 * 8901
    assert notes[0].value == pytest.approx(spec_area / (1e-5 * 5050 + 1e-3 * 2850), rel=1e-9)


def test_the_free_schedules_gradient_is_finite_at_the_floor_and_matches_differences():
    """A rate at the floor (peak e^-600) with gamma 1.5 made eta^-gamma overflow and the
    gradient NaN (0 * inf); elsewhere the gradient is the law's, by central differences."""
    from scalekit.surrogates._free_schedule import final_loss_and_gradient

    theta = [2.0, 0.6, 0.5, 400.0, 2.0, 0.6, 1.5]
    floor = np.r_[np.full(50, 1e-3), 1e-3 * np.exp(-np.minimum(np.linspace(0, 700, 50), 600))]
    value, grad = final_loss_and_gradient(theta, floor)
    assert np.isfinite(value) and np.isfinite(grad).all()
    rates = np.r_[np.full(30, 1e-3), np.linspace(1e-3, 1e-4, 70)]
    _, grad = final_loss_and_gradient(theta, rates)
    for j in (5, 40, 80, 99):
        step = np.zeros(rates.size)
        step[j] = 1e-9
        up, down = (final_loss_and_gradient(theta, rates + s)[0] for s in (step, -step))
        assert grad[j] == pytest.approx((up - down) / 2e-9, rel=1e-5)


@pytest.mark.slow
def test_the_shape_prior_estimates_the_unidentified_shape_closer_to_the_truth():
    """Three 3,000-step runs with AR(1) noise (sd 1e-3, lag-1 correlation 0.85, as the
    residuals of the 25M runs of Luo et al.): C, beta and gamma are poorly identified.
    The truth (2, 0.6, 0.6) lies within one prior width of the prior's centre (1, 0.5,
    0.5), so the posterior mode must estimate their logs with a smaller squared error,
    summed over three noise draws, than the free fit (measured: 2.4 against 7.9; over
    five draws 2.4 against 1,606, where one free fit runs off along the valley)."""
    from scalekit.surrogates._schedule_forecast import fit_multipower, run_schedules
    from scalekit.schedules import parse_schedule

    specs = {k: SPECS[k] for k in ("cos", "const", "two")}
    truth = np.log(TRUTH[4:])
    errors = {None: 0.0, 1.0: 0.0}
    for seed in range(3):
        rng = np.random.default_rng(seed)
        parts = []
        for name, spec in specs.items():
            rates = parse_schedule(spec).rates
            steps = np.arange(100, rates.size, 25)
            noise = rng.normal(0.0, 1e-3 * np.sqrt(1 - 0.85 ** 2), steps.size)
            noise[0] = rng.normal(0.0, 1e-3)
            for i in range(1, noise.size):
                noise[i] += 0.85 * noise[i - 1]
            parts.append(pd.DataFrame({"run": name, "step": steps, "lr": rates[steps],
                                       "loss": _curve(spec, steps) * np.exp(noise)}))
        frame = pd.concat(parts, ignore_index=True)
        for width in errors:
            fit = fit_multipower(frame, fit_on=list(specs), schedules=run_schedules(frame),
                                 shape_prior=width)
            shape = np.log([fit.values[k] for k in ("C", "beta", "gamma")])
            errors[width] += float(((shape - truth) ** 2).sum())
    assert errors[1.0] <= 0.5 * errors[None], errors
