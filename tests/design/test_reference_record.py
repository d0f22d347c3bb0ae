"""The recorded runs of Li et al.'s (2026) method on ScaleBench data_constrained (what
``bench/design_reference.py`` refits) are a design's runs on this pool: valid rows, within
each checkpoint's budget, the earlier checkpoint's runs a prefix of the later one's."""

import json

import numpy as np
import pandas as pd


def test_recorded_runs_are_a_sequential_design_within_budget(published_data):
    folder = published_data / "scalebench"
    record = json.loads((folder / "mspe_data_constrained_sl1.json").read_text())
    pool = pd.read_parquet(folder / "data_constrained" / "train.parquet")
    cost = 6.0 * pool["params"].to_numpy(float) * pool["tokens"].to_numpy(float)
    assert [r["seed"] for r in record["repeats"]] == list(range(42, 52))
    for repeat in record["repeats"]:
        low, middle = (repeat["chosen"][share] for share in record["shares"])
        for share, rows in repeat["chosen"].items():
            assert len(set(rows)) == len(rows) and min(rows) >= 0 and max(rows) < len(pool)
            assert cost[rows].sum() <= float(share) * cost.sum()
        assert middle[:len(low)] == low
        # their method starts from the cheapest runs (2.5 per parameter of the 7-parameter law)
        assert set(np.argsort(cost)[:17]) <= set(low)
