"""Several metrics at once: the paired comparison of their compute-optimal allocations
(issue 30), checked on synthetic sweeps with known D* exponents."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit.errors import InputError
from scalekit.isoflop import IsoFLOPProfiles
from scalekit.isoflop._per_metric import MetricComparison, compare_metrics, paired_exponents
from scalekit.isoflop._synthetic_metrics import isoflop_sweep
from scalekit.serialise import dumps

SETTINGS = {"approach": "2", "profile": "params", "figures": None, "budgets": None,
            "budget_tolerance": 0.1, "window": "all", "target_compute": 1e20, "bootstrap": 100,
            "ci_level": 0.95, "convention": "6ND", "flops_per_param_token": 6.0}


def _interval(paired):
    diff = paired.b_boot[:, 1] - paired.b_boot[:, 0]
    return np.nanpercentile(diff, [2.5, 97.5])


@pytest.mark.parametrize("exponents", [(0.45, 0.60), (0.5, 0.5)])
def test_interval_of_the_difference_covers_the_truth(exponents):
    """Of 20 sweeps (the bench runs 50), >= 90% of the 95% intervals of b2 - b1 cover the
    true difference; in the null case that is the "not distinguishable" flag."""
    truth = exponents[1] - exponents[0]
    covered = 0
    for seed in range(20):
        lo, hi = _interval(paired_exponents(isoflop_sweep(exponents, seed=seed), ["m1", "m2"],
                                            settings=SETTINGS, seed=seed))
        covered += lo <= truth <= hi
    assert covered >= 18


def test_paired_estimates_match_approach_2_fitted_per_metric():
    """The paired fit's point estimates are approach 2's (every point of a budget), metric by
    metric, and the truth lies within 0.03 of them."""
    frame = isoflop_sweep((0.45, 0.60), seed=3)
    paired = paired_exponents(frame, ["m1", "m2"], settings=SETTINGS)
    for m, (metric, truth) in enumerate((("m1", 0.45), ("m2", 0.60))):
        model = IsoFLOPProfiles(window="all", n_boot=0).fit(
            frame.drop(columns=[c for c in ("m1", "m2") if c != metric]).rename(
                columns={metric: "loss"}))
        assert paired.b[m] == pytest.approx(model.tokens_law_.exponent, abs=1e-9)
        assert paired.a[m] == pytest.approx(model.params_law_.exponent, abs=1e-9)
        assert paired.b[m] == pytest.approx(truth, abs=0.03)


def test_accuracy_is_analysed_as_its_error_and_the_result_round_trips():
    frame = isoflop_sweep((0.45, 0.60), seed=1)
    frame["acc"] = 1 - frame["m2"] / 10     # higher is better; its error is m2 / 10
    result = compare_metrics(frame, ["m1", "m2", "acc"], settings=SETTINGS,
                             higher_is_better=["acc"])
    pairs = result.to_frame().set_index(["metric_1", "metric_2"])
    assert len(pairs) == 3
    # the error of acc is m2 scaled: the same optimum, so the same exponents, flagged as such
    assert pairs.loc[("m2", "acc"), "diff_b"] == pytest.approx(0, abs=1e-9)
    assert not pairs.loc[("m2", "acc"), "distinguishable"]
    assert pairs.loc[("m1", "m2"), "distinguishable"]
    assert pairs.loc[("m1", "m2"), "diff_b_lo"] < 0.15 < pairs.loc[("m1", "m2"), "diff_b_hi"]
    assert pairs.loc[("m1", "m2"), "ratio_b"] == pytest.approx(0.60 / 0.45, abs=0.1)
    assert [d.code for d in result.diagnostics if d.code == "metrics_indistinguishable"] == \
        ["metrics_indistinguishable"]
    assert any("1 - value: acc" in n for n in result.notes)
    rows = result.allocations_frame()
    assert set(rows["metric"]) == {"m1", "m2", "acc"}
    at = rows.set_index("metric")
    assert at.loc["m1", "tokens_per_param"] == pytest.approx(
        at.loc["m1", "tokens"] / at.loc["m1", "params"])
    again = MetricComparison.from_dict(json.loads(dumps(result.to_dict())))
    assert again.to_dict() == json.loads(dumps(result.to_dict()))
    assert "D* grows" in result.summary() and "MetricComparison(" in repr(result)
    frame["acc"] = frame["acc"] + 1
    with pytest.raises(InputError, match="1 - acc"):
        compare_metrics(frame, ["m1", "acc"], settings=SETTINGS, higher_is_better=["acc"])


def test_cli_compares_metrics_per_group(tmp_path, capsys):
    a = isoflop_sweep((0.45, 0.60), seed=5).assign(res=16)
    b = isoflop_sweep((0.5, 0.5), seed=6).assign(res=32)
    b["run"] = b["run"] + "_32"
    path = tmp_path / "sweep.csv"
    pd.concat([a, b]).to_csv(path, index=False)
    out = tmp_path / "cmp.json"
    code = main(["isoflop", str(path), "--metric", "m1", "--metric", "m2", "--group", "res",
                 "--approach", "2", "--bootstrap", "100", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.isoflop_metrics/1"
    by_group = {p["group"]: p for p in report["pairs"]}
    assert by_group[16]["distinguishable"] and not by_group[32]["distinguishable"]
    assert [d["code"] for d in report["diagnostics"] if d["code"] == "metrics_indistinguishable"]
    bad = tmp_path / "bad.json"
    assert main(["isoflop", str(path), "--group", "res", "--json", str(bad)]) == 2
    assert main(["isoflop", str(path), "--metric", "m1", "--metric", "nope",
                 "--json", str(bad)]) == 2
    err = capsys.readouterr().err
    assert not bad.exists() and all(len(line) <= 200 for line in err.splitlines())


def test_one_metric_is_the_single_metric_analysis_of_that_column(tmp_path, capsys):
    frame = isoflop_sweep((0.45, 0.60), seed=2)
    named, as_loss = tmp_path / "named.csv", tmp_path / "loss.csv"
    frame.to_csv(named, index=False)
    frame.drop(columns=["m1"]).rename(columns={"m2": "loss"}).to_csv(as_loss, index=False)
    reports = []
    for path, extra in ((named, ["--metric", "m2"]), (as_loss, [])):
        out = tmp_path / f"{path.stem}.json"
        assert main(["isoflop", str(path), "--approach", "2", "--bootstrap", "20", "--quiet",
                     "--json", str(out), *extra]) == 0, capsys.readouterr().err
        reports.append(json.loads(out.read_text()))
    exponents = [r["approaches"]["2 IsoFLOP profiles"]["b"]["value"] for r in reports]
    assert exponents[0] == exponents[1] == pytest.approx(0.60, abs=0.03)


def test_bands_hold_the_true_optima_of_each_metric():
    """The synthetic optima are N*_m(C) = 0.1·√C_mid·(C / C_mid)^(1 - b_m) and D* = C / (6 N*):
    the fitted lines of the result pass within 3% of them at every budget, inside their band,
    and the budgets' optima lie within 3% too."""
    budgets = np.array([1e17, 3e17, 1e18, 3e18, 1e19])
    exponents = (0.45, 0.60)
    result = compare_metrics(isoflop_sweep(exponents, seed=4, budgets=budgets), ["m1", "m2"],
                             settings={**SETTINGS, "target_compute": 1e20})
    mid = np.exp(np.log(budgets).mean())
    bands, optima = result.bands_frame(), result.optima_frame()
    assert bands["compute"].min() == pytest.approx(1e17) and bands["compute"].max() == pytest.approx(1e20)
    for metric, b in zip(("m1", "m2"), exponents, strict=True):
        rows = bands[bands["metric"] == metric]

        def true_n(c, b=b):
            return 0.1 * np.sqrt(mid) * (c / mid) ** (1 - b)

        c = rows["compute"].to_numpy()
        inside = c <= budgets.max() * 1.0001
        for name, truth in (("params", true_n(c)), ("tokens", c / (6 * true_n(c)))):
            mid_line = rows[name].to_numpy()
            assert np.allclose(mid_line[inside], truth[inside], rtol=0.03)
            assert (rows[f"{name}_lo"] <= rows[name]).all() and (rows[name] <= rows[f"{name}_hi"]).all()
        dots = optima[optima["metric"] == metric]
        assert len(dots) == len(budgets)
        assert np.allclose(dots["params"], true_n(dots["compute"].to_numpy()), rtol=0.03)


def test_cli_draws_and_pages_several_metrics(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    isoflop_sweep((0.45, 0.60), seed=7).to_csv(path, index=False)
    png, page, out = tmp_path / "m.png", tmp_path / "m.html", tmp_path / "m.json"
    code = main(["isoflop", str(path), "--metric", "m1", "--metric", "m2", "--approach", "2",
                 "--bootstrap", "40", "--plot", str(png), "--html", str(page), "--json", str(out),
                 "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = page.read_text()
    assert "<svg" in text and "D* grows" in text
    again = tmp_path / "again.html"
    assert main(["report", str(out), "-o", str(again)]) == 0, capsys.readouterr().err
    assert "<svg" in again.read_text()
    bad = tmp_path / "m.txt"                      # an output suffix no figure has: nothing runs
    assert main(["isoflop", str(path), "--metric", "m1", "--metric", "m2",
                 "--plot", str(bad), "--json", str(tmp_path / "no.json")]) == 2
    assert not (tmp_path / "no.json").exists() and not bad.exists()


def test_a_metric_named_loss_is_compared_like_any_other():
    """With `loss` among the metrics, each other metric's paired fit still sees its own column
    (the paired fit used to drop the renamed column together with `loss`)."""
    frame = isoflop_sweep((0.45, 0.60), seed=8).rename(columns={"m1": "loss"})
    pair = compare_metrics(frame, ["m2", "loss"], settings={**SETTINGS, "bootstrap": 20}).pairs[0]
    assert pair["b_1"] == pytest.approx(0.60, abs=0.03) and pair["b_2"] == pytest.approx(0.45, abs=0.03)
