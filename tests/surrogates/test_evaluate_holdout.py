"""The holdout benchmark protocol (Alabdulmohsin et al. 2022) and M4 as the paper fits it.

M4's analytic Jacobian is checked against central differences with the other laws
(tests/laws/test_laws.py)."""

from __future__ import annotations

import numpy as np
import pytest

from scalekit.laws import get_law
from scalekit.laws._m4 import m4_law, paper_bounds, solve_logit
from scalekit.surrogates._evaluate import QUANTILES, Task, holdout_benchmark, win_rate
from scalekit.surrogates._paper_m4 import PaperM4

RNG = np.random.default_rng(3)
X = {"x": np.exp(RNG.uniform(10.0, 22.0, 15))}
THETAS = ([0.3, 0.95, 0.7, 50.0, 0.4], [0.1, 2.0, 1.8, 3e3, 0.6], [0.5, 1.0, 0.05, 20.0, 0.3])


@pytest.mark.parametrize("theta", THETAS)
def test_m4_solves_its_defining_equation(theta):
    theta = np.array(theta)
    L = get_law("m4").predict(X, theta)
    assert ((theta[0] < L) & (theta[1] > L)).all()
    lhs = (L - theta[0]) / (theta[1] - L) ** theta[2]
    np.testing.assert_allclose(lhs, theta[3] * X["x"] ** -theta[4], rtol=1e-9)


def test_root_without_alpha_is_the_closed_form():
    k = np.array([-3.0, -0.1, 0.5])
    u = solve_logit(k, np.zeros(3))
    np.testing.assert_allclose(1 / (1 + np.exp(-u[:2])), np.exp(k[:2]), rtol=1e-12)
    assert 1 / (1 + np.exp(-u[2])) == pytest.approx(1.0)   # no root: L saturates at L0


def test_paper_m4_recovers_a_known_curve():
    """Losses placed on the M4 curve by its explicit inverse x(L); the fit recovers the law
    and extrapolates it two decades beyond the fitted points."""
    linf, l0, alpha, beta, c = 0.2, 1.0, 0.6, 40.0, 0.45
    def x_of(L):
        return ((L - linf) / (beta * (l0 - L) ** alpha)) ** (-1.0 / c)
    L_fit = np.linspace(0.9, 0.45, 30)
    noise = np.exp(RNG.normal(0.0, 1e-4, L_fit.size))
    model = PaperM4(upper=1.0).fit(x_of(L_fit), L_fit * noise)
    values = model.values_
    assert values["alpha"] == pytest.approx(alpha, abs=0.05)
    assert values["c"] == pytest.approx(c, rel=0.05)
    assert values["Linf"] == pytest.approx(linf, abs=0.01)
    L_far = np.array([0.3, 0.25])
    np.testing.assert_allclose(model.predict(x_of(L_far)), L_far, rtol=5e-3)


def test_paper_bounds_hold_the_fit():
    y = np.array([0.9, 0.7, 0.6, 0.55, 0.52, 0.5])
    bounds = paper_bounds(y, upper=1.0)
    assert bounds == {"linf_max": pytest.approx(0.499), "l0_min": pytest.approx(0.901),
                      "l0_max": pytest.approx(1.001)}
    model = PaperM4(upper=1.0).fit(np.geomspace(1e5, 1e8, y.size), y)
    assert 0 <= model.values_["Linf"] <= 0.499 + 1e-12
    assert 0.901 - 1e-12 <= model.values_["L0"] <= 1.001 + 1e-12
    assert m4_law(**bounds).params[1].upper == pytest.approx(1.001)


def test_win_rate_truncates_to_three_decimals_and_splits_ties():
    ours = np.array([0.0101, 0.0209, 0.030, 0.5])
    ref = np.array([0.0109, 0.0201, 0.031, 0.4])
    # truncated: 10 vs 10 tie, 20 vs 20 tie, 30 < 31 win, 500 > 400 loss
    assert win_rate(ours, ref) == pytest.approx((0.5 + 0.5 + 1 + 0) / 4)


def _fixed(factor, spread):
    """A method forecasting truth-free: the last observed loss times ``factor``, with
    log-symmetric quantiles ``spread`` wide per unit of z."""
    from scipy.special import ndtri

    def method(tasks):
        return [np.exp(np.log(t.y[-1] * factor) + spread * ndtri(QUANTILES))[None, :]
                .repeat(t.x_target.size, axis=0) for t in tasks]
    return method


def test_protocol_matches_a_slow_computation():
    tasks = []
    for i in range(5):
        truth = 1.0 - 0.05 * RNG.uniform(size=3 + i)
        tasks.append(Task(f"r{i}", np.arange(1.0, 7.0), np.linspace(1.2, 1.0, 6),
                          np.arange(7.0, 10.0 + i), truth, group="A" if i < 3 else "B"))
    methods = {"ref": _fixed(0.97, 0.02), "ours": _fixed(0.99, 0.05)}
    table = holdout_benchmark(tasks, methods, reference="ref").table.set_index(["group", "method"])
    from scipy.stats import norm
    for group, members in (("A", tasks[:3]), ("B", tasks[3:])):
        per = {}
        for name, factor, spread in (("ref", 0.97, 0.02), ("ours", 0.99, 0.05)):
            rmse, inside = [], {0.5: [], 0.8: [], 0.95: []}
            for t in members:
                pred = t.y[-1] * factor
                rmse.append(np.sqrt(sum((np.log(pred) - np.log(v)) ** 2 for v in t.y_target)
                                    / len(t.y_target)))
                for level in inside:
                    half = spread * norm.ppf(0.5 + level / 2)
                    inside[level] += [abs(np.log(v) - np.log(pred)) <= half + 1e-12
                                      for v in t.y_target]
            per[name] = rmse
            row = table.loc[(group, name)]
            assert row["rmse_log"] == pytest.approx(np.mean(rmse))
            for level, hits in inside.items():
                assert row[f"cover{int(level * 100)}"] == pytest.approx(np.mean(hits))
            assert row["n_evaluations"] == len(members)
        wins = [1.0 if int(a * 1000) < int(b * 1000) else 0.5 if int(a * 1000) == int(b * 1000)
                else 0.0 for a, b in zip(per["ours"], per["ref"], strict=True)]
        assert table.loc[(group, "ours"), "win_rate_vs_reference"] == pytest.approx(np.mean(wins))
        assert table.loc[(group, "ours"), "ratio_to_reference"] == pytest.approx(
            np.mean(per["ours"]) / np.mean(per["ref"]))
        assert table.loc[(group, "ref"), "win_rate_vs_reference"] == 0.5


def test_cli_benchmark_reports_groups_against_m4(published_data, tmp_path, capsys):
    """Two published evaluations (a BIG-bench task, an NMT model): the JSON ``groups`` carry
    every measure; M4's RMSE equals a direct fit with the paper's settings, scored by hand."""
    import json

    import pandas as pd

    from scalekit_cli.app import main

    frame = pd.read_csv(published_data / "revisiting_nsl_lang.csv")
    frame = frame[(frame["Task"] == "('date', '1-shot')") | (frame["Model"] == "Dec-only")]
    path, out = tmp_path / "slice.csv", tmp_path / "bench.json"
    frame.to_csv(path, index=False)
    assert main(["forecast", str(path), "--evaluate", "--holdout-column", "Training",
                 "--by", "Domain", "--map", "run=Domain,Task,Model",
                 "--map", "step=Seen Examples", "--map", "loss=Loss", "--method", "pow3",
                 "--json", str(out), "--quiet"]) == 0
    groups = {(g["group"], g["method"]): g for g in json.loads(out.read_text())["groups"]}
    assert set(groups) == {(d, m) for d in ("BB", "NMT") for m in ("pow3", "m4-paper")}
    for domain, upper, l0_start in (("BB", 1.0, 1.001), ("NMT", None, 1.0)):
        curve = frame[frame["Domain"] == domain]
        fit, held = curve[curve["Training"] == 1], curve[curve["Training"] == 0]
        model = PaperM4(upper=upper, l0_start=l0_start).fit(fit["Seen Examples"], fit["Loss"])
        error = np.log(model.predict(held["Seen Examples"].to_numpy())) - np.log(held["Loss"])
        m4 = groups[(domain, "m4-paper")]
        assert m4["rmse_log"] == pytest.approx(np.sqrt(np.mean(error ** 2)), rel=1e-6)
        assert m4["win_rate_vs_m4"] == 0.5 and m4["ratio_to_m4"] == 1.0
        assert m4["n_evaluations"] == 1 and set(m4["coverage"]) == {"0.5", "0.8", "0.95"}
        ours = groups[(domain, "pow3")]
        assert ours["ratio_to_m4"] == pytest.approx(ours["rmse_log"] / m4["rmse_log"])
        assert ours["win_rate_vs_m4"] in (0.0, 0.5, 1.0)
