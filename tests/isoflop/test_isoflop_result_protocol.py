"""The three approaches as results: a fit on a sweep from a known Chinchilla surface goes
through strict JSON and ``from_dict`` and comes back with the same numbers; summaries in
fixed sections and one-line reprs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from isoflop.isoflop_synthetic import A_TRUE, B_TRUE, G_TRUE, learning_curves, sweep
from scalekit.errors import NotFittedError
from scalekit.isoflop import Envelope, IsoFLOPProfiles, ParametricOptimum
from scalekit.serialise import dumps

COMPUTE = np.array([1e18, 3e19, 1e21, 1e23])
# a small start grid (fitting space: log E, log A, log B, alpha, beta) keeps the bootstrap quick
STARTS = np.stack(np.meshgrid(*[np.linspace(lo, hi, 3) for lo, hi in
                                ((0, 1), (0, 10), (0, 10), (0, 1), (0, 1))]), -1).reshape(-1, 5)


def _thinned_sweep():
    """A sweep whose smallest budget keeps two sizes: approach 2 skips it (a diagnostic)."""
    data = sweep(seed=1)
    return data.drop(data.index[data["compute"] == data["compute"].min()][2:])


CASES = {
    "envelope": (lambda: Envelope(n_boot=30, n_grid=120),
                 lambda: learning_curves(seed=0, n_runs=20, n_steps=30), "Envelope"),
    "profiles": (lambda: IsoFLOPProfiles(n_boot=30), _thinned_sweep, "Budgets"),
    "parametric": (lambda: ParametricOptimum(n_boot=10, starts=STARTS),
                   lambda: sweep(seed=1), "Law"),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    make, data, section = CASES[request.param]
    model = make().fit(data())
    written = json.loads(dumps(model.to_dict()))
    return model, type(model).from_dict(written), written, section


def _sections(text: str) -> list[str]:
    return [line.strip("[]") for line in text.splitlines() if line.startswith("[[")]


def test_the_fit_finds_the_known_allocation(case):
    model = case[0]
    assert model.params_law_.exponent == pytest.approx(A_TRUE, abs=0.03)
    assert model.tokens_law_.exponent == pytest.approx(B_TRUE, abs=0.03)
    if isinstance(model, ParametricOptimum):
        assert pytest.approx(G_TRUE, rel=0.1) == model.G_


def test_the_restored_estimator_has_the_same_numbers(case):
    model, back, written, _ = case
    assert type(back) is type(model) and back.settings() == model.settings()
    for name in ("params_law_", "tokens_law_"):
        law, restored = getattr(model, name), getattr(back, name)
        assert (restored.exponent, restored.coef) == (law.exponent, law.coef)
        assert (restored.exponent_ci, restored.coef_ci) == (law.exponent_ci, law.coef_ci)
        np.testing.assert_array_equal(restored.predict(COMPUTE), law.predict(COMPUTE))
        np.testing.assert_array_equal(restored.interval(COMPUTE), law.interval(COMPUTE))
    assert back.compute_range_ == model.compute_range_
    assert back.diagnostics_ == model.diagnostics_ and back.warnings_ == model.warnings_
    assert back.extrapolation(1e23) == model.extrapolation(1e23)
    assert json.loads(dumps(back.to_dict())) == written


def test_the_restored_estimator_has_its_approach_s_own_results(case):
    model, back = case[:2]
    if isinstance(model, Envelope):
        pd.testing.assert_frame_equal(back.frontier_, model.frontier_, check_exact=True)
    elif isinstance(model, IsoFLOPProfiles):
        pd.testing.assert_frame_equal(back.budgets_, model.budgets_, check_exact=True)
        assert back.budgeting_ == model.budgeting_
    else:
        assert back.result_.values == model.result_.values and back.G_ == model.G_
        points = {"params": np.array([1e8, 1e10]), "tokens": np.array([1e10, 1e12])}
        np.testing.assert_array_equal(back.result_.predict(points), model.result_.predict(points))


def test_summary_and_repr(case):
    model, back, _, section = case
    sections = _sections(model.summary())
    assert sections[:3] == ["Allocation", section, "Settings"]
    assert back.summary() == model.summary()
    line = repr(model)
    assert "\n" not in line and len(line) < 100
    assert line.startswith(f"{type(model).__name__}(a=") and repr(back) == line
    assert "<table>" in model._repr_html_()
    if isinstance(model, IsoFLOPProfiles):  # the skipped budget is said under its heading
        assert sections[-1] == "Notes and warnings"
        assert "info: budget 1e+18 FLOPs has 2 distinct params values" in model.summary()


def test_an_unfitted_estimator_says_so():
    assert repr(Envelope()) == "Envelope(fitted=no)"
    assert _sections(IsoFLOPProfiles().summary()) == ["Settings"]
    with pytest.raises(NotFittedError):
        ParametricOptimum().to_dict()


def test_restored_settings_fit_again_to_the_same_law():
    model = ParametricOptimum(n_boot=0, starts=STARTS).fit(sweep(seed=2))
    back = ParametricOptimum.from_dict(json.loads(dumps(model.to_dict())))
    again = back.fit(sweep(seed=2))
    assert again.params_law_.exponent == model.params_law_.exponent


def test_refitting_a_restored_profile_without_its_replicates_is_refused():
    model = IsoFLOPProfiles(n_boot=30, window="all").fit(sweep(seed=1, shift=0.3))
    assert model.refit_without("off_centre") is not None
    back = IsoFLOPProfiles.from_dict(json.loads(dumps(model.to_dict())))
    with pytest.raises(NotFittedError, match="bootstrap replicates"):
        back.refit_without("off_centre")
