"""Syne Tune's schedulers, run for real through its simulator on our sweeps (bench/peers_allocate.py):
the FLOPs read off its event log are the FLOPs its trials cost, and no budget is overspent."""
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("syne_tune")
pytest.importorskip("huggingface_hub")

from bench_module import load_bench  # noqa: E402

from scalekit.allocate._sweep import sweep_from_frame  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def peers():
    return load_bench("peers_allocate")


def _sweep():
    # Six runs that never cross: the bigger, the lower at every step and at the end.
    rows = []
    for i, params in enumerate([1e6, 2e6, 4e6, 8e6, 16e6, 32e6]):
        for step in np.geomspace(10, 1000, 12):
            rows.append(dict(run=f"r{i}", step=step, tokens=step * 1e3, params=params,
                             loss=2.0 + 5.0 * params ** -0.2 + 30.0 * step ** -0.5))
    return sweep_from_frame(pd.DataFrame(rows), resource="compute")


@pytest.mark.parametrize("workers", [1, 3])
def test_the_event_log_counts_what_the_trials_cost(peers, tmp_path, monkeypatch, workers):
    monkeypatch.setenv("SYNETUNE_FOLDER", str(tmp_path))
    sweep = _sweep()
    events = peers.simulate(sweep, sweep.runs, "st_asha", 0, workers)
    total = sweep.total_compute()
    # A trial stopped at level k cost its run the compute of level k: summed over the trials,
    # that is what the event log's increments add up to.
    last = events.groupby("trial_id").agg(run=("run", "first"), level=("level", "max"))
    cost = sum(peers.levels(sweep.curves[run])[0][level - 1] for run, level in last.itertuples(index=False))
    step = events.sort_values(["trial_id", "level"]).groupby("trial_id")["elapsed"].diff()
    logged = step.fillna(events.sort_values(["trial_id", "level"])["elapsed"]).sum()
    assert logged / peers.TIME_SCALE * total == pytest.approx(cost, rel=1e-9)
    # Its trials are the candidates, each started once (random search without duplicates).
    assert last["run"].is_unique and set(last["run"]) <= set(sweep.runs)
    for row in peers.read_budgets(events, sweep, total):
        assert row["spent_share"] <= 1 + 1e-9
        assert row["regret"] >= -1e-12
