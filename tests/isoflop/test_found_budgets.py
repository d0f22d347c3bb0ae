"""IsoFLOP approach 2 finds the budgets of compute values that are not on a grid (points
read off a figure), says which, and reaches the published exponent with no settings
(issue 22, item 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scalekit.isoflop._approach2 import IsoFLOPProfiles
from scalekit.isoflop._budgets import assign_budgets, find_budgets
from scalekit_cli.app import main


def test_scattered_budgets_are_found_near_their_nominal_values():
    rng = np.random.default_rng(0)
    nominal = np.array([6e18, 1e19, 3e19, 1e20])
    compute = np.repeat(nominal, 8) * np.exp(rng.normal(0, 0.03, 32))   # ~1% of a decade
    found = find_budgets(compute)
    assert found is not None and found.size == 4
    assert np.allclose(np.log10(found), np.log10(nominal), atol=0.02)
    assigned = assign_budgets(compute, figures=None)
    assert np.unique(assigned.budget).size == 4 and "4 budgets found" in assigned.method
    assert np.unique(assign_budgets(compute, figures=2).budget).size > 4   # rounding splits


def test_a_grid_is_left_to_rounding_and_scattered_values_without_clusters_too():
    grid = np.repeat([1e18, 1e19, 1e20], 6)
    assert find_budgets(grid) is None
    assert "round to 2" in assign_budgets(grid, figures=None).method
    assert find_budgets(np.geomspace(1e18, 1e21, 40)) is None


def test_chinchilla_points_give_the_published_exponent_with_no_settings(published_data):
    data = pd.read_csv(published_data / "chinchilla_epoch_svg.csv")
    data = data.rename(columns={"Model Size": "params", "Training FLOP": "compute"})
    model = IsoFLOPProfiles(n_boot=0).fit(data)
    assert model.params_law_.exponent == pytest.approx(0.50, abs=0.02)   # Hoffmann: 0.49-0.51
    assert "budgets found as clusters of compute" in model.budgeting_


def test_the_cli_prints_the_budgets_it_found(published_data, capsys):
    assert main(["isoflop", str(published_data / "chinchilla_epoch_svg.csv"), "--approach", "2",
                 "--bootstrap", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "budgets found as clusters of compute (5.5e+18, 9.4e+18," in out
