"""The plot functions: drawn into the caller's axes, and what each is asked to show.

Read back from the matplotlib artists, against closed forms where there is one.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from scalekit.allocate import allocate  # noqa: E402
from scalekit.allocate._synthetic import early_leader_sweep  # noqa: E402
from scalekit.errors import InputError  # noqa: E402
from scalekit.fit import fit_law, plan_for_compute  # noqa: E402
from scalekit.laws import get_law  # noqa: E402
from scalekit.report.allocate_plots import plot_allocations, plot_frontiers  # noqa: E402
from scalekit.report.fit_plots import efficient_frontier, plot_curve, plot_surface  # noqa: E402
from scalekit.report.forecast_plots import drawn_runs, plot_forecasts  # noqa: E402

TRUTH = dict(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)


@pytest.fixture(scope="module")
def chinchilla():
    """A Chinchilla fit to exact points of the law of Hoffmann et al. (2022)."""
    n, d = np.meshgrid(np.geomspace(1e7, 1e10, 8), np.geomspace(1e9, 1e12, 8))
    X = {"params": n.ravel(), "tokens": d.ravel()}
    y = get_law("chinchilla").predict(X, TRUTH)
    start = [np.log(TRUTH["E"]) - 0.1, np.log(TRUTH["A"]), np.log(TRUTH["B"]), 0.3, 0.3]
    return fit_law("chinchilla", X, y, starts=[start]), X, y


@pytest.fixture(autouse=True)
def no_figures_left():
    yield
    plt.close("all")


def optimal_params(values, compute):
    """Closed form N*(C) of L = E + A/N^a + B/D^b under C = 6 N D (Hoffmann et al. 2022, eq. 4)."""
    a, b = values["alpha"], values["beta"]
    g = (a * values["A"] / (b * values["B"])) ** (1 / (a + b))
    return g * (compute / 6) ** (b / (a + b))


def test_frontier_is_the_closed_form_and_never_vertical(chinchilla):
    result, X, _ = chinchilla
    assert result.values["alpha"] == pytest.approx(TRUTH["alpha"], rel=1e-3)
    compute = np.geomspace(1e17, 1e26, 40)
    n_best, d_best = efficient_frontier(result, compute, (1e7, 1e10))
    assert n_best.size == compute.size
    np.testing.assert_allclose(n_best, optimal_params(result.values, compute), rtol=0.01)
    np.testing.assert_allclose(6 * n_best * d_best, compute, rtol=1e-9)
    assert np.all(np.diff(np.log(n_best)) > 0)        # a vertical line would repeat one N


def test_frontier_leaves_out_computes_without_an_interior_optimum():
    """A data term without a floor in N: loss falls with N at every compute, no optimum."""
    law = get_law("chinchilla")
    values = dict(TRUTH, A=1e-12)

    class OnlyData:
        def predict(self, X):
            return law.predict(X, values) - 1e-3 * np.log(X["params"])

    n_best, _ = efficient_frontier(OnlyData(), np.geomspace(1e18, 1e22, 5), (1e7, 1e10))
    assert n_best.size == 0


def test_surface_draws_plan_point_and_one_colour_scale(chinchilla):
    result, X, y = chinchilla
    plan = plan_for_compute(result, 5.76e23)
    fig, ax = plt.subplots()
    returned = plot_surface(result, X, y, ax=ax, plan=plan, title="seed = 3")
    assert returned is ax and plt.get_fignums() == [fig.number]
    star = [line for line in ax.lines if line.get_marker() == "*"]
    assert len(star) == 1
    np.testing.assert_allclose(star[0].get_xydata()[0], [plan["params"], plan["tokens"]])
    left, right = ax.get_xlim()
    assert left < plan["params"] < right
    contours = ax.collections[0]
    points = next(c for c in ax.collections if c.get_array() is not None and len(c.get_offsets()))
    bar = fig.axes[-1]
    norms = [contours.norm, points.norm]
    assert all(n.vmin == norms[0].vmin and n.vmax == norms[0].vmax for n in norms)
    assert bar.get_ylim() == pytest.approx((norms[0].vmin, norms[0].vmax))
    assert "seed = 3" in ax.get_title()


def test_curve_draws_plan_point_with_its_interval(tmp_path):
    law = get_law("saturating_power")
    x = np.geomspace(1e18, 1e21, 12)
    y = law.predict({"x": x}, {"E": 1.7, "A": 30.0, "alpha": 0.08}) * np.exp(
        np.random.default_rng(0).normal(0, 0.002, x.size))
    result = fit_law(law, {"x": x}, y, starts=[[np.log(1.6), np.log(30.0), 0.1]])
    plan = {"compute": 1e23, "loss": float(result.predict({"x": [1e23]})[0]), "loss_pi": [2.0, 2.2]}
    path = tmp_path / "curve.png"
    ax = plot_curve(result, x, y, path, plan=plan, title="group = a")
    assert path.stat().st_size > 0 and plt.get_fignums() == []      # written, then closed
    marker = next(c for c in ax.containers if hasattr(c, "lines") and c.lines[0].get_marker() == "*")
    np.testing.assert_allclose(marker.lines[0].get_xydata()[0], [1e23, plan["loss"]])
    assert ax.get_xlim()[1] > 1e23 and "group = a" in ax.get_title()


def test_allocate_policies_differ_in_style_and_marker():
    sweep = early_leader_sweep(seed=0, sizes=4, variants=2, points=30)
    budget = 0.2 * sweep.total_compute()
    results = {"uniform": allocate(sweep, "uniform", budget),
               "loss": allocate(sweep, "loss", budget),
               "loss-eta2": allocate(sweep, "loss", budget, eta=2)}
    fig = plot_allocations(sweep, results, rung_policy="loss", title="budget 20%")
    left = fig.axes[0]
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker()) for line in left.lines
              if line.get_label().split(" ")[0] in results}
    assert len(styles) == 3 and len(set(styles.values())) == 3
    assert all(marker not in ("None", "", None) for _, marker in styles.values())
    assert fig.get_suptitle() == "budget 20%"
    fig2, ax = plt.subplots()
    assert plot_frontiers(sweep, {n: r[0] for n, r in results.items()}, ax=ax) is ax
    fig3, pair = plt.subplots(1, 2)
    assert plot_allocations(sweep, results, ax=pair) is fig3 and pair[1].get_title()
    with pytest.raises(InputError, match=r"The value of `ax` is '1 Axes', but must be 2 Axes"):
        plot_allocations(sweep, results, ax=[ax])


def forecast_table(finals):
    rows = [{"run": run, "x": x, **{f"q{q:g}": final * (1 + (q - 0.5) * 0.1) * (x / 20) ** -0.1
                                   for q in (0.025, 0.1, 0.25, 0.5, 0.75, 0.9, 0.975)}}
            for run, final in finals.items() for x in (20.0, 40.0, 60.0)]
    return pd.DataFrame(rows)


def test_forecast_plot_draws_the_runs_asked_for_or_a_spread():
    finals = {f"r{i:02d}": 2.0 + 0.1 * ((7 * i) % 12) for i in range(12)}
    table = forecast_table(finals)
    observed = pd.DataFrame([{"run": r, "step": s, "loss": 3.0} for r in finals for s in (1, 10)])
    order = sorted(finals, key=finals.get)
    shown, notes = drawn_runs(table, max_runs=5)
    assert len(shown) == 5 and shown[0] == order[0] and shown[-1] == order[-1]
    assert notes and notes[0].startswith("7 of 12 runs not drawn")
    asked = ["r03", "r11", "r00"]
    fig, ax = plt.subplots()
    assert plot_forecasts(observed, table, ax=ax, runs=asked) is ax
    assert [t.get_text() for t in ax.get_legend().get_texts()] == asked
    assert drawn_runs(table.head(9 * 3), max_runs=9) == (sorted(
        list(finals)[:9], key=finals.get), [])
